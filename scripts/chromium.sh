#!/usr/bin/env bash
# Installs Debian's Chromium for the web UI's browser tests (peers/webui drives it with
# playwright-core; Playwright's own browser download does not work here) and prints its path.
# Idempotent: nothing is installed when the binary is already there. $AGENTWIRE_CHROMIUM names
# another binary. Everything but the path goes to stderr.
set -euo pipefail

say() { echo "scripts/chromium.sh: $*" >&2; }
fail() {
  say "$*"
  exit 1
}

chromium="${AGENTWIRE_CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$chromium" ]]; then
  [[ -z "${AGENTWIRE_CHROMIUM:-}" ]] || fail "AGENTWIRE_CHROMIUM=$chromium is not an executable"
  command -v apt-get >/dev/null 2>&1 || fail "Chromium is not installed and there is no apt-get to install it"
  [[ $(id -u) -eq 0 ]] || fail "Chromium is not installed and installing it needs root (apt-get install chromium)"
  say "installing Chromium from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  if ! log="$(apt-get update -qq 2>&1 && apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core 2>&1)"; then
    printf '%s\n' "$log" >&2
    fail "apt-get install chromium failed"
  fi
  [[ -x "$chromium" ]] || fail "chromium installed, but $chromium is missing"
fi
say "$("$chromium" --version 2>/dev/null || echo "$chromium")"
echo "$chromium"
