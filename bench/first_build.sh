#!/usr/bin/env bash
# What a first `scripts/run.sh` costs: a fresh build tree built to target execmcp_product (what
# run.sh builds) against the same fresh tree built whole (what it built before: every test, fuzzer
# and bench), measured one after the other in one run. Prints wall and CPU seconds and the ratio.
#   bench/first_build.sh [jobs]        (default: nproc; run it on an idle machine)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${1:-$(nproc)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

measure() {  # name target...
  local name="$1" dir="$work/$1"
  shift
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  local commands
  commands="$(cd "$dir" && ninja -t commands "${@:-all}" | grep -c ' -c ' || true)"
  local targets=()
  for target in "$@"; do targets+=(--target "$target"); done
  local started=$SECONDS
  local TIMEFORMAT='%U %S'  # bash's own time: the CPU seconds of cmake and every compiler
  { time cmake --build "$dir" -j "$jobs" "${targets[@]}" >/dev/null; } 2>"$work/cpu"
  local wall=$((SECONDS - started))
  printf '| %-28s | %8s | %6s | %6s |\n' "$name" "$commands" "$wall" \
    "$(awk '{ printf "%.0f", $1 + $2 }' "$work/cpu")"
  walls+=("$wall")
}

walls=()
echo "first build of execmcp, $jobs jobs, $(nproc) cpus, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| build | compiles | wall s | cpu s |"
echo "|---|---|---|---|"
measure "run.sh (execmcp_product)" execmcp_product
measure "everything (before)"
echo
awk -v a="${walls[0]}" -v b="${walls[1]}" \
  'BEGIN { printf "run.sh'"'"'s first build: %.2fx the wall time of building everything\n", a / b }'
