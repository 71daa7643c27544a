#!/usr/bin/env bash
# Runs one pass of the test suite in a build tree: the tests that are not Docker's first, one per
# core (they are CPU-bound), then the Docker ones at a higher parallelism (they wait on the engine,
# not the CPU, and every suite names its containers apart). Each half writes a JUnit file into the
# build tree (junit-PASS-cpu.xml, junit-PASS-docker.xml); the pass ends with its slowest tests.
#   scripts/ctest-pass.sh BUILD_DIR PASS [--only LABELS] [--skip LABELS] [-- ctest args...]
# LABELS is a ctest label regex (e.g. '^(bench|deploy)$'). With ctest args (a user's -R, -L, -LE)
# the pass is one ctest run with them at EXECMCP_TEST_JOBS (default 2), as before the split.
# Environment:
#   EXECMCP_TEST_JOBS         tests at once in the CPU half (default: the number of cores)
#   EXECMCP_DOCKER_TEST_JOBS  tests at once in the Docker half (default 4)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:?usage: ctest-pass.sh BUILD_DIR PASS [--only LABELS] [--skip LABELS] [-- ctest args]}"
pass="${2:?usage: ctest-pass.sh BUILD_DIR PASS [--only LABELS] [--skip LABELS] [-- ctest args]}"
shift 2
only=""
skip=""
user_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only="${2:?--only needs a label regex}"; shift 2 ;;
    --skip) skip="${2:?--skip needs a label regex}"; shift 2 ;;
    --) shift; user_args=("$@"); break ;;
    *) user_args=("$@"); break ;;
  esac
done

cd "$dir"
rm -f junit-"$pass".xml junit-"$pass"-*.xml  # what an earlier pass wrote
common=(--output-on-failure --timeout 900 --no-tests=ignore)
junits=()
failed=0
if [ "${#user_args[@]}" -gt 0 ]; then
  junits+=("junit-$pass.xml")
  ctest "${common[@]}" -j "${EXECMCP_TEST_JOBS:-2}" --output-junit "junit-$pass.xml" \
    "${user_args[@]}" || failed=1
else
  only_args=()
  [ -z "$only" ] || only_args=(-L "$only")
  cpu_skip="docker"
  [ -z "$skip" ] || cpu_skip="docker|$skip"
  docker_skip=()
  [ -z "$skip" ] || docker_skip=(-LE "$skip")
  echo "ctest-pass: $pass: tests without an engine, ${EXECMCP_TEST_JOBS:-$(nproc)} at once" >&2
  junits+=("junit-$pass-cpu.xml")
  ctest "${common[@]}" -j "${EXECMCP_TEST_JOBS:-$(nproc)}" --output-junit "junit-$pass-cpu.xml" \
    "${only_args[@]}" -LE "$cpu_skip" || failed=1
  if [ "${EXECMCP_DOCKER_TESTS:-1}" != 0 ]; then
    echo "ctest-pass: $pass: Docker tests, ${EXECMCP_DOCKER_TEST_JOBS:-4} at once" >&2
    junits+=("junit-$pass-docker.xml")
    ctest "${common[@]}" -j "${EXECMCP_DOCKER_TEST_JOBS:-4}" \
      --output-junit "junit-$pass-docker.xml" "${only_args[@]}" -L docker "${docker_skip[@]}" ||
      failed=1
  fi
fi

present=()
for f in "${junits[@]}"; do [ ! -f "$f" ] || present+=("$dir/$f"); done
if [ "${#present[@]}" -gt 0 ] && command -v python3 >/dev/null 2>&1; then
  python3 "$root/scripts/test-report.py" --title "$pass" "${present[@]}" >&2 || true
fi
exit "$failed"
