#!/bin/sh
# PID 1's child in a swarm node container (scripts/swarm-cluster.sh): makes the container's cgroup
# and sysctl views writable, then runs dockerd in the foreground. The container is not privileged
# (every capability but SYS_RESOURCE, seccomp and AppArmor unconfined, device rule 'a *:* rwm', a
# private cgroup namespace), so Docker mounted these read-only; each remount below changes only
# this container's mount, never the host's.
set -eu

say() { echo "swarm-node: $*" >&2; }

# cgroup v1: a tmpfs with one mount per hierarchy; v2: one cgroup2 mount. With a private cgroup
# namespace each shows the container's own subtree as its root.
mount -o remount,rw /sys/fs/cgroup || say "cannot remount /sys/fs/cgroup read-write"
for dir in /sys/fs/cgroup/*; do
  if [ ! -d "$dir" ] || [ -L "$dir" ]; then continue; fi
  if grep -q " $dir cgroup " /proc/self/mounts; then
    mount -o remount,bind,rw "$dir" || say "cannot remount $dir read-write"
  fi
done
# dockerd writes the forwarding and bridge sysctls of its own network namespace.
mount -o remount,bind,rw /proc/sys || say "cannot remount /proc/sys read-write"
mount -o remount,rw /sys || say "cannot remount /sys read-write"

# The inner engine's address ranges: clear of the host's 172.16.0.0/12 pools (where the node
# container's own network comes from) and of Swarm's default 10.0.0.0/8 overlay pool's low end.
# shellcheck disable=SC2086 # SWARM_NODE_DOCKERD_ARGS is a word list on purpose
exec dockerd \
  --host=unix:///var/run/docker.sock \
  --storage-driver="${SWARM_NODE_STORAGE_DRIVER:-overlay2}" \
  --bip=192.168.250.1/24 \
  --default-address-pool=base=192.168.128.0/18,size=24 \
  ${SWARM_NODE_DOCKERD_ARGS:-}
