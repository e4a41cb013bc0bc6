-- The sessions list (`Store::list_sessions`): one owner's sessions, most recently updated first.
CREATE INDEX sessions_by_owner_updated ON sessions (owner, updated_at, id);
