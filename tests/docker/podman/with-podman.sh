#!/usr/bin/env bash
# Runs a command with Podman ready to stand in for the docker CLI (rootful), so the docker-cli
# backend can be tested with `podman` as its binary.
#   tests/docker/podman/with-podman.sh COMMAND [ARG…]
# Before the command: loads the runtime image (and the busybox test image) from the Docker engine
# into Podman's store when missing or stale (`docker save | podman load`, compared by image id),
# and starts one throwaway container as a smoke test. The command sees:
#   EXECMCP_TEST_BACKEND_SETTINGS  {"docker_binary":"podman","docker_flags":[…],"image":"…",
#                                   "cli_env":{"PATH":"/usr/sbin:/usr/bin:/sbin:/bin"[,"CONTAINERS_CONF":"…"]}}
#   EXECMCP_TEST_OUTSIDE_CLI       podman (first in PATH: a wrapper with the same flags and config)
#   EXECMCP_TEST_PODMAN_IMAGE, EXECMCP_TEST_PODMAN_BUSYBOX_IMAGE   the exact names loaded
# Exit status: the command's, or 1 when Podman cannot be set up. Podman's global flags here:
# --cgroup-manager=cgroupfs and --events-backend=file (no systemd as PID 1 on CI sandboxes; both
# also work with systemd), plus --storage-driver=$EXECMCP_PODMAN_STORAGE_DRIVER when set (a
# store keeps its driver: switching needs `podman system reset`). Without CAP_SYS_RESOURCE (some
# sandboxes), rootful Podman's default container limits (nofile and nproc 1048576) cannot be set,
# so a containers.conf pins them to what this process may grant (CONTAINERS_CONF).
# Needs root, Debian's podman and catatonit (scripts/install-deps.sh --test), a Docker engine
# holding execmcp/runtime:latest (docker/build.sh).
set -euo pipefail

say() { echo "with-podman: $*" >&2; }
die() {
  say "$*"
  exit 1
}

if [ "$#" -eq 0 ]; then
  sed -n '2,21p' "$0" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
podman_bin=/usr/bin/podman
[ -x "$podman_bin" ] || die "$podman_bin not found: install podman (scripts/install-deps.sh --test)"
[ "$(id -u)" -eq 0 ] || die "run as root: the docker-cli tests use rootful Podman"
[ -x /usr/libexec/podman/catatonit ] || [ -x /usr/bin/catatonit ] ||
  die "catatonit not found (podman's --init needs it): install catatonit"

dir="$(mktemp -d "${TMPDIR:-/tmp}/execmcp-podman.XXXXXX")"
trap 'rm -rf "$dir"' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

flags=(--cgroup-manager=cgroupfs --events-backend=file)
[ -z "${EXECMCP_PODMAN_STORAGE_DRIVER:-}" ] || flags+=("--storage-driver=$EXECMCP_PODMAN_STORAGE_DRIVER")

# CAP_SYS_RESOURCE is bit 24 of the effective set.
conf=""
cap_eff="$(awk '/^CapEff:/ {print $2}' /proc/self/status)"
if (( ((0x$cap_eff >> 24) & 1) == 0 )); then
  nofile="$(ulimit -Hn)"
  # Podman lowers its own nproc hard limit to kernel.pid_max before it starts runc.
  nproc="$(ulimit -Hu)"
  pid_max="$(cat /proc/sys/kernel/pid_max)"
  if [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pid_max" ]; then nproc="$pid_max"; fi
  [ "$nofile" != unlimited ] || nofile=1048576
  conf="$dir/containers.conf"
  printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n' \
    "$nofile" "$nofile" "$nproc" "$nproc" >"$conf"
fi

# The outside CLI: `podman` first in PATH, with the same flags and config as the backend's.
mkdir -p "$dir/bin"
{
  echo '#!/bin/sh'
  [ -z "$conf" ] || echo "CONTAINERS_CONF='$conf'; export CONTAINERS_CONF"
  echo "exec $podman_bin ${flags[*]} \"\$@\""
} >"$dir/bin/podman"
chmod 755 "$dir/bin/podman"
pm() { "$dir/bin/podman" "$@"; }

# Loads `image` from the Docker engine when Podman lacks it or holds another id; prints the name
# Podman knows it by. Podman keeps the id (the config digest), so ids compare across engines.
# Returns 1 when neither engine has it, 2 when loading failed (said on stderr).
load_image() {
  local image="$1" docker_id podman_id="" name="" candidate out
  docker_id="$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null)" || docker_id=""
  for candidate in "localhost/$image" "docker.io/$image" "$image"; do
    if podman_id="$(pm image inspect --format '{{.Id}}' "$candidate" 2>/dev/null)"; then
      name="$candidate"
      break
    fi
    podman_id=""
  done
  if [ -z "$docker_id" ]; then
    [ -n "$name" ] || return 1
    say "the Docker engine has no $image; using Podman's copy ($name) as it is"
  elif [ "sha256:$podman_id" != "$docker_id" ]; then
    say "loading $image into Podman (docker save | podman load)"
    if ! out="$(docker save "$image" | pm load 2>&1)"; then
      say "podman load of $image failed: $out"
      return 2
    fi
    # The old copy, now untagged, would only take space; one still in use stays.
    [ -z "$podman_id" ] || pm rmi "$podman_id" >/dev/null 2>&1 || true
    name="$(printf '%s\n' "$out" | sed -nE 's/^Loaded image(\(s\))?: //p' | head -n 1 | cut -d, -f1)"
    if [ -z "$name" ]; then
      say "podman load of $image did not say what it loaded: $out"
      return 2
    fi
  fi
  echo "$name"
}

# Serialised: two runs loading at once would each write the same layers.
exec 9>"/tmp/execmcp-podman-load.lock"
flock 9
rc=0
image="$(load_image execmcp/runtime:latest)" || rc=$?
[ "$rc" -ne 1 ] ||
  die "no execmcp/runtime:latest in the Docker engine or in Podman: build it with docker/build.sh"
[ "$rc" -eq 0 ] || exit 1
# The busybox image is built offline when busybox-static is there; without it those tests skip.
busybox=""
if "$here/../fixtures/build-busybox-image.sh" >/dev/null 2>&1; then
  busybox="$(load_image execmcp/test-busybox:latest)" || exit 1
fi
flock -u 9
exec 9>&-

# Smoke test: what the backend's containers need (--init is catatonit, limits, read-only root).
if ! out="$(pm run --rm --pull never --init --network none --read-only --read-only-tmpfs=false \
  --cap-drop ALL --security-opt no-new-privileges --pids-limit 64 "$image" true 2>&1)"; then
  die "podman cannot run a container here: $out"
fi

settings="{\"docker_binary\":\"podman\",\"docker_flags\":["
sep=""
for f in "${flags[@]}"; do
  settings+="$sep\"$f\""
  sep=","
done
settings+="],\"image\":\"$image\",\"cli_env\":{\"PATH\":\"/usr/sbin:/usr/bin:/sbin:/bin\""
[ -z "$conf" ] || settings+=",\"CONTAINERS_CONF\":\"$conf\""
settings+="}}"
export EXECMCP_TEST_BACKEND_SETTINGS="$settings"
export EXECMCP_TEST_OUTSIDE_CLI=podman
export EXECMCP_TEST_PODMAN_IMAGE="$image"
export EXECMCP_TEST_PODMAN_BUSYBOX_IMAGE="$busybox"
export PATH="$dir/bin:$PATH"
say "podman $("$podman_bin" version --format '{{.Client.Version}}'), image $image${busybox:+, busybox $busybox}${conf:+, limits from $conf}"

rc=0
"$@" || rc=$?
exit "$rc"
