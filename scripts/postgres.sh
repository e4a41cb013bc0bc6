#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the store's tests and prints the line that points them
# at it:
#
#   eval "$(scripts/postgres.sh)"   # exports AGENTWIRE_TEST_DATABASE_URL=postgres://…
#
# Installs PostgreSQL from Debian's packages when no server binaries are found (needs root and
# apt), creates a cluster under $AGENTWIRE_PG_DIR (default /tmp/agentwire-pg) that trusts local
# connections only, starts it on a free loopback port (kept in the cluster's directory) and
# creates the database `agentwire`. Idempotent: when the server is already up it only prints the
# URL. initdb refuses to run as root, so as root the cluster belongs to the `postgres` user.
# Everything but the export line goes to stderr.
set -euo pipefail

dir="${AGENTWIRE_PG_DIR:-/tmp/agentwire-pg}"
data="$dir/data"
user=agentwire
database=agentwire

say() { echo "scripts/postgres.sh: $*" >&2; }
fail() {
  say "$*"
  exit 1
}

# The directory of initdb/pg_ctl: on PATH, else Debian's versioned directory (newest first).
find_bin() {
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v pg_ctl)"
    return
  fi
  local candidate
  for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [[ -x "$candidate/initdb" && -x "$candidate/pg_ctl" ]]; then
      echo "$candidate"
      return
    fi
  done
}

bin="$(find_bin)"
if [[ -z "$bin" ]]; then
  [[ $(id -u) -eq 0 ]] || fail "PostgreSQL is not installed and installing it needs root (apt-get install postgresql)"
  say "installing PostgreSQL from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  bin="$(find_bin)"
  [[ -n "$bin" ]] || fail "postgresql installed, but no initdb/pg_ctl found under /usr/lib/postgresql"
fi

# Runs a server program as the cluster's owner: ourselves, or `postgres` when we are root.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

mkdir -p "$dir"
if [[ $(id -u) -eq 0 ]]; then
  # Debian's package creates the user; a server found elsewhere may not have.
  id postgres >/dev/null 2>&1 || useradd --system --shell /bin/sh postgres
  chown postgres: "$dir"
fi

if [[ ! -f "$data/PG_VERSION" ]]; then
  say "creating a cluster in $data"
  as_owner "$bin/initdb" --pgdata="$data" --username="$user" --auth=trust --encoding=UTF8 \
    --no-sync >/dev/null
fi

# A free loopback port, chosen once and kept with the cluster.
if [[ ! -s "$dir/port" ]]; then
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' \
    >"$dir/port.new" 2>/dev/null || echo 54329 >"$dir/port.new"
  mv "$dir/port.new" "$dir/port"
fi
port="$(cat "$dir/port")"

if ! as_owner "$bin/pg_ctl" status --pgdata="$data" >/dev/null 2>&1; then
  say "starting PostgreSQL on 127.0.0.1:$port"
  # Sockets in the cluster's own directory: /var/run/postgresql may not exist or be writable.
  as_owner "$bin/pg_ctl" start --pgdata="$data" --wait --log="$dir/server.log" \
    --options="-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c max_connections=300" \
    >/dev/null || fail "PostgreSQL did not start; see $dir/server.log"
fi

psql_bin="$bin/psql"
[[ -x "$psql_bin" ]] || psql_bin="$(command -v psql)"
exists="$("$psql_bin" -h 127.0.0.1 -p "$port" -U "$user" -d postgres -tAc \
  "SELECT 1 FROM pg_database WHERE datname = '$database'")"
if [[ "$exists" != 1 ]]; then
  "$psql_bin" -h 127.0.0.1 -p "$port" -U "$user" -d postgres -qc "CREATE DATABASE $database" >&2
fi

echo "export AGENTWIRE_TEST_DATABASE_URL=postgres://$user@127.0.0.1:$port/$database"
