#!/usr/bin/env bash
# Installs missing Debian packages, then configures and builds execmcp into build/ (or $EXECMCP_BUILD_DIR).
#   scripts/build.sh [--test|--release-checks] [extra cmake args...]
# Without an option it builds what `cmake --install` installs (the server, its plugins and
# programs: target execmcp_product); --test adds the test dependencies and builds every target;
# --release-checks builds the product, the benches and the programs that the tests with the labels
# bench, deploy, load and install run (target execmcp_release_checks; CI runs every other test in
# the ASan tree: scripts/test.sh --ci).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${EXECMCP_BUILD_DIR:-$root/build}"

deps_args=()
targets=(--target execmcp_product)
case "${1:-}" in
  --test) deps_args+=(--test); targets=(); shift ;;
  --release-checks) deps_args+=(--test); targets=(--target execmcp_release_checks); shift ;;
esac
"$root/scripts/install-deps.sh" "${deps_args[@]}"

jobs="${EXECMCP_JOBS:-$(nproc)}"
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >&2
elif [ "$#" -gt 0 ]; then
  cmake "$build_dir" "$@" >&2
fi
cmake --build "$build_dir" -j "$jobs" "${targets[@]}" >&2
echo "execmcp: built $build_dir/bin/execmcp" >&2
