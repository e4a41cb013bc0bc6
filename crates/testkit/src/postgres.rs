//! A PostgreSQL database of a test's own: a fresh schema on the server that
//! `scripts/postgres.sh` starts and names in `AGENTWIRE_TEST_DATABASE_URL`. Tests that run at
//! once (and the runs of other checkouts on the same server) then share no rows: no run of one
//! is swept as a dead node's by another, and no migration of one meets another's schema.

use std::sync::atomic::{AtomicU32, Ordering};

/// The variable naming the test server.
pub const VARIABLE: &str = "AGENTWIRE_TEST_DATABASE_URL";

/// A URL of a new, empty schema, or `None` when no test server is named.
///
/// # Panics
/// When the server is named but refuses the schema.
pub async fn schema_url() -> Option<String> {
    let base = std::env::var(VARIABLE).ok()?;
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let schema = format!(
        "test_{}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.subsec_nanos())
    );
    let pool = sqlx::PgPool::connect(&base)
        .await
        .unwrap_or_else(|error| panic!("{VARIABLE}: {error}"));
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&pool)
        .await
        .unwrap_or_else(|error| panic!("creating schema {schema}: {error}"));
    pool.close().await;
    let separator = if base.contains('?') { '&' } else { '?' };
    Some(format!("{base}{separator}options[search_path]={schema}"))
}

/// As [`schema_url`], where the test requires the server.
///
/// # Panics
/// When no test server is named.
pub async fn required_schema_url() -> String {
    schema_url()
        .await
        .unwrap_or_else(|| panic!("{VARIABLE} is not set: run `eval \"$(scripts/postgres.sh)\"`"))
}
