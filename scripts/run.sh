#!/usr/bin/env bash
# Builds execmcp if needed and serves MCP on stdio for one agent (default: configs/local.yaml, agent "default").
#   scripts/run.sh [CONFIG [AGENT]]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${EXECMCP_BUILD_DIR:-$root/build}"
config="${1:-$root/configs/local.yaml}"
agent="${2:-default}"

"$root/scripts/build.sh"

cat >&2 <<MSG

execmcp is serving agent '$agent' from $config over MCP on stdio (local backend, no Docker needed).
It speaks JSON-RPC on this terminal's stdin/stdout; logs go to stderr. To use it, point an MCP
client at the same command, e.g. in a client's server list:
  {"command": "$build_dir/bin/execmcp", "args": ["serve", "--config", "$config", "--agent", "$agent"]}
Try it by hand: paste  {"jsonrpc":"2.0","id":1,"method":"tools/list"}  and press Enter. Ctrl-D stops it.

MSG
exec "$build_dir/bin/execmcp" serve --config "$config" --agent "$agent"
