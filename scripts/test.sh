#!/usr/bin/env bash
# Installs everything the tests need, builds, starts a Docker engine if none answers, builds the
# runtime image (cached), installs the MCP client for the end-to-end tests, and runs every test.
#   scripts/test.sh [ctest args...]      e.g. scripts/test.sh -L docker   or   -LE docker
#   scripts/test.sh --ci                 what CI runs: every test, then the whole suite again under
#                                        ASan+UBSan, the MCP and local suites under TSan
#                                        (scripts/sanitize.sh) and each fuzz target for 30 s
#                                        (scripts/fuzz.sh) from a fixed seed, so a CI run
#                                        can be replayed (EXECMCP_FUZZ_SEED=0 draws a new one)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${EXECMCP_BUILD_DIR:-$root/build}"
ci=0
if [ "${1:-}" = "--ci" ]; then ci=1; shift; fi

"$root/scripts/build.sh" --test

engine_started=0
cleanup() {
  if [ "$engine_started" = 1 ]; then "$root/scripts/docker-engine.sh" stop --force || true; fi
}
trap cleanup EXIT

if [ "${EXECMCP_DOCKER_TESTS:-1}" != 0 ]; then
  if ! "$root/scripts/docker-engine.sh" status >/dev/null 2>&1; then
    "$root/scripts/docker-engine.sh" start
    engine_started=1
  fi
  # The runtime image, its sudo variant for the `sudo: true` tests (docker_options), and the
  # egress proxy of `network: egress` agents (docker_egress_*, preinstall, e2e; they skip without).
  "$root/docker/build.sh" --runtime --sudo --egress
fi

# The end-to-end tests drive the real server with the official MCP TypeScript SDK client.
if [ -f "$root/tests/e2e/package.json" ]; then
  (cd "$root/tests/e2e" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

(cd "$build_dir" && ctest --output-on-failure --timeout 900 -j "${EXECMCP_TEST_JOBS:-2}" "$@")

if [ "$ci" = 1 ]; then
  "$root/scripts/sanitize.sh" asan tsan
  EXECMCP_FUZZ_SEED="${EXECMCP_FUZZ_SEED:-1}" "$root/scripts/fuzz.sh" "${EXECMCP_FUZZ_SECONDS:-30}"
fi
