#!/usr/bin/env bash
# Installs the pinned peer clients the compatibility tests run against, from their registries:
#   peers/<name>/package-lock.json  → `npm ci` into peers/<name>/node_modules
#   peers/<name>/requirements.txt   → a venv at peers/<name>/.venv, `pip install -r` (exact pins)
# A peer is skipped when what is installed matches its pins (a stamp of their hash). Prints one
# line per peer saying what it did.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

fail() {
  echo "scripts/peers.sh: $*" >&2
  exit 1
}

# The stamp a current install carries: the hash of the pin files and the interpreter's version.
stamp_of() {
  local version="$1"
  shift
  { cat "$@"; echo "$version"; } | sha256sum | cut -d' ' -f1
}

install_npm() {
  local peer="$1" name="${1##*/}"
  command -v node >/dev/null 2>&1 || fail "node is not installed (needed for peers/$name)"
  command -v npm >/dev/null 2>&1 || fail "npm is not installed (needed for peers/$name)"
  local node_major
  node_major="$(node -p 'process.versions.node.split(".")[0]')"
  if ((node_major < 22)) && [[ "$name" == ai-sdk ]]; then
    echo "scripts/peers.sh: note: node $(node --version) is older than the Node >= 22 that ai 7 declares" >&2
  fi
  local stamp="$peer/node_modules/.agentwire-peers-stamp" want
  want="$(stamp_of "$(node --version)" "$peer/package.json" "$peer/package-lock.json")"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "peers: $name already installed (node_modules matches package-lock.json)"
    return
  fi
  local log
  if ! log="$(cd "$peer" && npm ci --no-audit --no-fund --loglevel=error 2>&1)"; then
    printf '%s\n' "$log" >&2
    fail "npm ci failed in peers/$name"
  fi
  printf '%s\n' "$want" >"$stamp"
  echo "peers: installed $name with npm ci (node $(node --version))"
}

install_python() {
  local peer="$1" name="${1##*/}"
  command -v python3 >/dev/null 2>&1 || fail "python3 is not installed (needed for peers/$name)"
  local venv="$peer/.venv"
  local stamp="$venv/.agentwire-peers-stamp" want
  want="$(stamp_of "$(python3 --version 2>&1)" "$peer/requirements.txt")"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "peers: $name already installed (.venv matches requirements.txt)"
    return
  fi
  rm -rf "$venv"
  local log
  if ! log="$(python3 -m venv "$venv" 2>&1 &&
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
      -r "$peer/requirements.txt" 2>&1)"; then
    printf '%s\n' "$log" >&2
    fail "pip install failed in peers/$name"
  fi
  printf '%s\n' "$want" >"$stamp"
  echo "peers: installed $name into peers/$name/.venv ($(python3 --version 2>&1))"
}

for peer in "$root"/peers/*/; do
  peer="${peer%/}"
  if [[ -f "$peer/package-lock.json" ]]; then install_npm "$peer"; fi
  if [[ -f "$peer/requirements.txt" ]]; then install_python "$peer"; fi
done
