#!/usr/bin/env bash
# Installs the whole build tree to a temporary prefix and checks that the installed `execmcp`
# finds its plugins and supervisor there and serves MCP on the local backend.
#   install_test.sh CMAKE BUILD_DIR
set -euo pipefail
cmake_bin="$1"
build_dir="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$cmake_bin" --install "$build_dir" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; echo "FAIL: cmake --install" >&2; exit 1; }
exe="$tmp/prefix/bin/execmcp"
[ -x "$exe" ] || { echo "FAIL: $exe was not installed" >&2; exit 1; }

# Plugins come from the install's plugin dir, not the build tree.
plugins="$(env -u EXECMCP_PLUGIN_PATH "$exe" plugins)"
for name in local sanitize patterns; do
  grep -Eq "^$name .*$tmp/prefix/lib/execmcp/plugins/" <<<"$plugins" ||
    { echo "FAIL: installed plugin '$name' not listed:" >&2; echo "$plugins" >&2; exit 1; }
done

mkdir -p "$tmp/ws"
cat >"$tmp/config.yaml" <<YAML
execmcp: 1
agents:
  - id: inst
    cwd: $tmp/ws
    backend: {plugin: local}
    filters: [{plugin: sanitize}]
YAML

# One MCP exchange over stdio with the installed server.
reply="$( { printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"install-test","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_command","arguments":{"command":"echo served-from-install; pwd"}}}'
  sleep 3; } | env -u EXECMCP_PLUGIN_PATH "$exe" serve --config "$tmp/config.yaml" --agent inst 2>"$tmp/serve.log")"
grep -q '"id":2' <<<"$reply" || { echo "FAIL: no reply to the tool call:" >&2; echo "$reply" >&2; cat "$tmp/serve.log" >&2; exit 1; }
grep -q 'served-from-install\\n'"$tmp"'/ws' <<<"$reply" ||
  { echo "FAIL: unexpected tool result:" >&2; echo "$reply" >&2; cat "$tmp/serve.log" >&2; exit 1; }
echo "installed execmcp served a command from $tmp/prefix"
