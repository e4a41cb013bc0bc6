#!/usr/bin/env bash
# Installs the pinned peer clients the compatibility tests run against (today:
# the npm package `ai`, in peers/ai-sdk) exactly as package-lock.json says,
# with `npm ci`. Skips the install when node_modules already matches the
# lockfile. Prints one line saying what it did.
set -euo pipefail

here="${BASH_SOURCE[0]%/*}"
[[ "$here" == "${BASH_SOURCE[0]}" ]] && here=.
root="$(cd "$here/.." && pwd)"
peer="$root/peers/ai-sdk"

fail() {
  echo "scripts/peers.sh: $*" >&2
  exit 1
}

command -v node >/dev/null 2>&1 || fail "node is not installed (needed for peers/ai-sdk; ai 7 wants Node >= 22)"
command -v npm >/dev/null 2>&1 || fail "npm is not installed (needed for peers/ai-sdk)"
[[ -f "$peer/package.json" && -f "$peer/package-lock.json" ]] || fail "missing $peer/package.json or package-lock.json"

node_major="$(node -p 'process.versions.node.split(".")[0]')"
if (( node_major < 22 )); then
  echo "scripts/peers.sh: warning: node $(node --version) is older than the Node >= 22 that ai 7 declares" >&2
fi

# What "current" means: the stamp written after the last successful install
# matches the hash of package.json + package-lock.json and the node version.
stamp="$peer/node_modules/.agentwire-peers-stamp"
want="$(node -e '
  const { createHash } = require("node:crypto");
  const { readFileSync } = require("node:fs");
  const h = createHash("sha256");
  for (const f of process.argv.slice(1)) h.update(readFileSync(f));
  h.update(process.version);
  console.log(h.digest("hex"));
' "$peer/package.json" "$peer/package-lock.json")"

version="$(node -e '
  try {
    console.log(require(process.argv[1]).packages["node_modules/ai"].version);
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
' "$peer/package-lock.json")" || fail "cannot read the ai version from $peer/package-lock.json"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "peers: ai@$version already installed in peers/ai-sdk (node_modules matches package-lock.json)"
  exit 0
fi

if ! log="$(cd "$peer" && npm ci --no-audit --no-fund --loglevel=error 2>&1)"; then
  printf '%s\n' "$log" >&2
  fail "npm ci failed in $peer"
fi
printf '%s\n' "$want" >"$stamp"
echo "peers: installed ai@$version in peers/ai-sdk with npm ci (node $(node --version))"
