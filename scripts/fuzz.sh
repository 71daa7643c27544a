#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang into build-fuzz/ and runs each one from its
# seed corpus for the given number of seconds (default 60), two at a time.
#   scripts/fuzz.sh [build|run] [seconds] [ctest -R regex]
# `build` only builds, `run` only runs (what scripts/test.sh --ci times apart); neither: both.
# A crash, a leak, undefined behaviour or a 10 s hang on one input fails the run; the input is kept
# in build-fuzz/tests/fuzz/fuzz-artifacts/<target>/ to replay with the target binary.
# The tree compiles at -O1 with line tables, as OSS-Fuzz builds its targets.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${EXECMCP_FUZZ_BUILD_DIR:-$root/build-fuzz}"
do_build=1
do_run=1
case "${1:-}" in
  build) do_run=0; shift ;;
  run) do_build=0; shift ;;
esac
seconds="${1:-60}"
filter="${2:-.}"

if [ "$do_build" = 1 ]; then
  "$root/scripts/install-deps.sh" --fuzz
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    CC=clang CXX=clang++ cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DEXECMCP_FUZZ=ON -DEXECMCP_BUILD_BENCH=OFF \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
      "-DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all" >&2
  fi
  cmake --build "$dir" -j "${EXECMCP_JOBS:-$(nproc)}" --target execmcp_fuzzers >&2
fi
[ "$do_run" = 1 ] || exit 0
cd "$dir"
EXECMCP_FUZZ_SECONDS="$seconds" ctest -L fuzz -R "$filter" --output-on-failure \
  -j "${EXECMCP_TEST_JOBS:-2}" --output-junit junit-fuzz.xml
