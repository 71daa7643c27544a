#!/usr/bin/env bash
# Runs the test suites under the sanitizers, each in its own build tree next to build/:
#   build-asan  the whole suite under AddressSanitizer + UndefinedBehaviorSanitizer (any report fails)
#   build-tsan  the MCP layer, the HTTP server, the local backend, command supervision, the
#               docker-api runner channel, the agents (per-user sandboxes' timers and pool) and the
#               container backend's unit tests under ThreadSanitizer
#   scripts/sanitize.sh [asan|tsan]...     (default: both)
# Called by `scripts/test.sh --ci`, which sets up what the suites need first (packages, Docker
# engine and runtime image, the e2e client); run alone, the docker-labelled tests skip.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
modes=("$@")
[ "${#modes[@]}" -gt 0 ] || modes=(asan tsan)

"$root/scripts/install-deps.sh" --test

configure_and_build() {  # dir flags targets...
  local dir="$1" flags="$2"
  shift 2
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEXECMCP_BUILD_BENCH=OFF \
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
      echo "sanitize: whole suite under ASan+UBSan" >&2
      # The deployment and load tests run the program in images and at length: once (in the main
      # pass) is enough. So are docker-cli's runs on the engine (and over SSH, with Podman): they
      # repeat docker-api's suites through the shared container backend, which runs here, and the
      # CLI plugin's own code runs here in its unit tests (a fake docker binary). The gVisor runs
      # (runsc) repeat docker-api's suites on another runtime, mostly through the same code as
      # here; runtime_check's runs here in its unit tests, the stop check only in the main pass.
      (cd "$dir" && ctest --output-on-failure --timeout 900 -j "${EXECMCP_TEST_JOBS:-2}" \
        -LE "format|install|bench|deploy|load|ssh|podman|docker-cli|runsc")
      ;;
    tsan)
      dir="${EXECMCP_TSAN_BUILD_DIR:-$root/build-tsan}"
      configure_and_build "$dir" "-fsanitize=thread" \
        --target execmcp_mcp_tests execmcp_http_tests execmcp_local_tests execmcp_plugin_local \
        execmcp_local_supervisor execmcp_supervision_tests execmcp_docker_api_unit_tests \
        execmcp_host_agent_test execmcp_docker_common_unit_tests
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
      run_tsan execmcp_docker_api_unit_tests execmcp_host_agent_test
      run_tsan execmcp_docker_common_unit_tests
      rm -rf "$logs"
      [ "$failed" = 0 ] || exit 1
      ;;
    *) echo "sanitize.sh: unknown mode '$mode' (asan, tsan)" >&2; exit 2 ;;
  esac
done
