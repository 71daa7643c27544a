#!/usr/bin/env bash
# Installs the SDK of a build tree into a temp prefix, builds sdk/examples/echo_backend out of tree
# against it, and runs `execmcp exec` on the result when the host program is given.
#   sdk_install_test.sh CMAKE GENERATOR BUILD_DIR EXAMPLE_SRC [EXECMCP_PROGRAM]
set -euo pipefail
cmake_bin=$1 generator=$2 build_dir=$3 example_src=$4 execmcp_bin=${5:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/execmcp-sdk-test-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

step() { echo "== $*" >&2; }
fail() { echo "FAIL: $*" >&2; exit 1; }

step "installing the SDK from $build_dir into $prefix"
# Only the sdk/ folder's install rules (SDK package + conformance kit), so the test does not need
# every plugin and the host built; a whole-tree install is the fallback.
find_config() { find "$prefix" -name execmcpConfig.cmake -path '*/cmake/execmcp/*' 2>/dev/null | head -n1; }
if [ -f "$build_dir/sdk/cmake_install.cmake" ]; then
  "$cmake_bin" -DCMAKE_INSTALL_PREFIX="$prefix" -P "$build_dir/sdk/cmake_install.cmake" \
    >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log" >&2; fail "installing sdk/ failed"; }
fi
# execmcpConfig.cmake checks that the plugin dir exists; a whole-tree install makes it.
[ -z "$(find_config)" ] || mkdir -p "$prefix/lib/execmcp/plugins"
if [ -z "$(find_config)" ]; then
  "$cmake_bin" --install "$build_dir" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }
fi
config=$(find_config)
[ -n "$config" ] || fail "the install has no cmake/execmcp/execmcpConfig.cmake"
config_dir=$(dirname "$config")
for f in "$config_dir/execmcpConfigVersion.cmake" "$config_dir/execmcp-plugin.cmake" \
         "$prefix/include/execmcp/sdk/sdk.hpp"; do
  [ -f "$f" ] || fail "the install has no $f"
done

step "building the example plugin out of tree"
"$cmake_bin" -S "$example_src" -B "$tmp/build" -G "$generator" -DCMAKE_PREFIX_PATH="$prefix" \
  >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log" >&2; fail "configuring the example failed"; }
"$cmake_bin" --build "$tmp/build" >"$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log" >&2; fail "building the example failed"; }
plugin=$tmp/build/execmcp_echo.so
[ -f "$plugin" ] || fail "the build made no $plugin"
# The host finds plugins by these two exported aliases.
for sym in execmcp_plugin_descriptor execmcp_create_backend; do
  nm -D --defined-only "$plugin" | grep -qw "$sym" || fail "$plugin does not export $sym"
done
exported=$(nm -D --defined-only "$plugin" | grep -c ' [TDBVRW] ' || true)
echo "example plugin built: $plugin ($exported exported symbols)" >&2

if [ -z "$execmcp_bin" ] || [ ! -x "$execmcp_bin" ]; then
  echo "PASS (install + out-of-tree build); no execmcp program in this build, so the host run was not done" >&2
  exit 0
fi

step "running the host on the example plugin"
mkdir -p "$tmp/agent-a"
cat >"$tmp/config.yaml" <<YAML
execmcp: 1
plugin_paths: [$tmp/build]
agents:
  - id: a
    cwd: $tmp/agent-a
    backend: {plugin: echo, settings: {}}
YAML
rc=0
out=$("$execmcp_bin" exec --config "$tmp/config.yaml" --agent a -- hello 2>"$tmp/exec.err") || rc=$?
[ "$rc" -eq 0 ] || { cat "$tmp/exec.err" >&2; fail "execmcp exec failed (exit $rc)"; }
case "$out" in
  *"echo: hello"*) echo "host output: $out" >&2 ;;
  *) cat "$tmp/exec.err" >&2; fail "expected 'echo: hello' from execmcp exec, got: $out" ;;
esac
echo "PASS" >&2
