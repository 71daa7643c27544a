#!/usr/bin/env bash
# Runs the test suites under the sanitizers, each in its own build tree next to build/:
#   build-asan  every test under AddressSanitizer + UndefinedBehaviorSanitizer (any report fails)
#               but those that must run release binaries (labels bench, deploy, load, install:
#               scripts/test.sh --ci runs them in build/): CI's main pass
#   build-tsan  the MCP layer, the HTTP server, the local backend, command supervision, the
#               docker-api runner channel, the agents (per-user sandboxes' timers and pool) and the
#               container backend's unit tests under ThreadSanitizer
#   scripts/sanitize.sh [--build-only|--test-only] [asan|tsan]...     (default: both)
# Called by `scripts/test.sh --ci`, which sets up what the suites need first (packages, Docker
# engine and runtime image, the e2e client); run alone, the docker-labelled tests fail without an
# engine (EXECMCP_DOCKER_TESTS=0 skips them).
# The sanitizer trees compile at -O1 -g1 (line tables: a report still names file and line), as
# OSS-Fuzz builds its sanitizer targets: half the compile time of -O2 -g, and nothing the
# sanitizers check is lost (they see every line that runs either way).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
do_build=1
do_test=1
case "${1:-}" in
  --build-only) do_test=0; shift ;;
  --test-only) do_build=0; shift ;;
esac
modes=("$@")
[ "${#modes[@]}" -gt 0 ] || modes=(asan tsan)

[ "$do_build" = 0 ] || "$root/scripts/install-deps.sh" --test

configure_and_build() {  # dir flags targets...
  local dir="$1" flags="$2"
  shift 2
  [ "$do_build" = 1 ] || return 0
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEXECMCP_BUILD_BENCH=OFF \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
      "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_EXE_LINKER_FLAGS=$flags" \
      "-DCMAKE_SHARED_LINKER_FLAGS=$flags" "-DCMAKE_MODULE_LINKER_FLAGS=$flags" >&2
  fi
  cmake --build "$dir" -j "${EXECMCP_JOBS:-$(nproc)}" "$@" >&2
}

for mode in "${modes[@]}"; do
  case "$mode" in
    asan)
      dir="${EXECMCP_ASAN_BUILD_DIR:-$root/build-asan}"
      configure_and_build "$dir" \
        "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
      # Every report is fatal; leaks of a test process count too.
      export ASAN_OPTIONS="abort_on_error=0:detect_leaks=1:detect_stack_use_after_return=0"
      export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
      [ "$do_test" = 1 ] || continue
      echo "sanitize: every test under ASan+UBSan but the release-only labels" >&2
      # The benches, the deployment images, the load tests and `cmake --install` run release
      # binaries (scripts/test.sh --ci runs them in build/); everything else runs here, the
      # Docker suites in every column (backend, exec mode, runtime, SSH, Podman) included.
      "$root/scripts/ctest-pass.sh" "$dir" asan --skip '^(bench|deploy|load|install)$'
      ;;
    tsan)
      dir="${EXECMCP_TSAN_BUILD_DIR:-$root/build-tsan}"
      configure_and_build "$dir" "-fsanitize=thread" \
        --target execmcp_mcp_tests execmcp_http_tests execmcp_local_tests execmcp_plugin_local \
        execmcp_local_supervisor execmcp_supervision_tests execmcp_host_agent_test \
        execmcp_docker_common_unit_tests
      [ "$do_test" = 1 ] || continue
      export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
      echo "sanitize: MCP, HTTP, local, supervision, runner-channel, agent (per-user sandboxes) and" \
        "container-backend suites under TSan" >&2
      # Two suites at a time (one per core), each into its own log, shown whole when it fails.
      logs="$(mktemp -d)"
      failed=0
      run_tsan() {  # suite...
        local suite pids=() names=()
        for suite in "$@"; do
          "$dir/bin/$suite" >"$logs/$suite.log" 2>&1 &
          pids+=("$!")
          names+=("$suite")
        done
        for i in "${!pids[@]}"; do
          if wait "${pids[$i]}"; then
            echo "sanitize: tsan ${names[$i]}: $(grep -E '^\[  PASSED  \]' "$logs/${names[$i]}.log")" >&2
          else
            echo "sanitize: tsan ${names[$i]} FAILED:" >&2
            cat "$logs/${names[$i]}.log" >&2
            failed=1
          fi
        done
      }
      run_tsan execmcp_mcp_tests execmcp_http_tests
      run_tsan execmcp_local_tests execmcp_supervision_tests
      run_tsan execmcp_docker_common_unit_tests execmcp_host_agent_test
      rm -rf "$logs"
      [ "$failed" = 0 ] || exit 1
      ;;
    *) echo "sanitize.sh: unknown mode '$mode' (asan, tsan)" >&2; exit 2 ;;
  esac
done
