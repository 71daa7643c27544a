#!/usr/bin/env bash
# Starts, stops and reports a Docker engine on a machine without systemd (CI, sandboxes, containers).
#   scripts/docker-engine.sh start    start dockerd in the background unless an engine already answers
#   scripts/docker-engine.sh stop [--force]
#                                     stop the dockerd that this script started (never anyone else's);
#                                     refuses while containers run unless --force
#   scripts/docker-engine.sh status   say whether an engine answers and who started it
#   scripts/docker-engine.sh reload   register runsc (gVisor) with the running dockerd this script
#                                     started, without restarting it (rewrites the daemon config,
#                                     then SIGHUP: dockerd reloads its runtimes)
#   scripts/docker-engine.sh owns     exit 0 when the engine that DOCKER_HOST reaches is the dockerd
#                                     this script started (so `stop` would stop it), else 1 and why;
#                                     quick: it asks no engine (tests that restart the engine ask
#                                     first and skip when the answer is no)
# When runsc is installed, the engine this script starts has a `runsc` runtime (see
# docs/deployment.md, "gVisor"): dockerd gets a config file of ours, $EXECMCP_STATE_DIR/
# execmcp-dockerd.json, unless /etc/docker/daemon.json exists (that is the operator's config: the
# script then leaves it alone and registers nothing).
# Environment:
#   EXECMCP_STATE_DIR      where the log, pid file and daemon config go (default /tmp)
#   EXECMCP_DOCKERD_ARGS   extra dockerd arguments, e.g. "--storage-driver=vfs"
#   EXECMCP_DOCKER_WAIT    seconds to wait for the socket (default 60)
#   EXECMCP_DOCKER_SOCKET  socket dockerd listens on (default /var/run/docker.sock). A second daemon
#                          on one host needs its own --data-root, --exec-root, --pidfile and bridge
#                          (--bridge=none deletes docker0, breaking the first daemon's networking).
set -euo pipefail

state_dir="${EXECMCP_STATE_DIR:-/tmp}"
log_file="$state_dir/execmcp-dockerd.log"
pid_file="$state_dir/execmcp-dockerd.pid"
driver_file="$state_dir/execmcp-dockerd.driver"
config_file="$state_dir/execmcp-dockerd.json"
system_config=/etc/docker/daemon.json
socket="${EXECMCP_DOCKER_SOCKET:-/var/run/docker.sock}"
wait_secs="${EXECMCP_DOCKER_WAIT:-60}"
export DOCKER_HOST="${DOCKER_HOST:-unix://$socket}"

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

say() { echo "docker-engine: $*" >&2; }

# True when an engine answers on DOCKER_HOST, else on the socket. `docker version` needs both the
# client and the server half; the client negotiates the API version down to the daemon's.
engine_answers() {
  if command -v docker >/dev/null 2>&1; then
    timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1 && return 0
  fi
  # No CLI: ask the socket directly.
  [ -S "$socket" ] && command -v curl >/dev/null 2>&1 &&
    timeout 5 curl -fsS --unix-socket "$socket" http://localhost/_ping >/dev/null 2>&1
}

our_pid() {
  [ -f "$pid_file" ] || return 1
  local pid
  pid="$(cat "$pid_file")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  # Not root: the recorded pid is the sudo that runs dockerd, which passes signals on.
  case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
    dockerd | sudo) echo "$pid" ;;
    *) return 1 ;;
  esac
}

install_engine() {
  say "dockerd not found; installing docker.io"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends docker.io >&2
}

# The daemon config this script gives dockerd:
# - address pools of /24 networks in Docker's own 172.16.0.0/12 (4096 networks): each sandbox with
#   `network: egress` has an internal network of its own, and Docker's defaults (/16s and /20s) run
#   out at about 30 networks ("could not find an available, non-overlapping IPv4 address pool"),
#   so a shared server could hold no more than about 30 such sandboxes (docs/deployment.md);
# - the runsc runtime when runsc is installed. runsc 0.0~20221219 refuses to start a container of
#   `--network none` with its default network stack ("cannot run with network enabled in root
#   network namespace"), so it runs with --network=none: its sandbox has loopback only, whatever
#   network the container is on.
write_config() {
  local file="$1" runsc_path runtimes=""
  if runsc_path="$(command -v runsc)"; then
    runtimes="$(printf ',\n  "runtimes": {\n    "runsc": {"path": "%s", "runtimeArgs": ["--network=none"]}\n  }' "$runsc_path")"
  fi
  printf '{\n  "default-address-pools": [{"base": "172.16.0.0/12", "size": 24}]%s\n}\n' "$runtimes" |
    $sudo tee "$file.tmp" >/dev/null
  $sudo mv -f "$file.tmp" "$file"
}

# The dockerd args that give it our config file; none when the operator has a config of their own.
config_args() {
  if [ -e "$system_config" ]; then
    say "$system_config exists: dockerd reads it; runsc is registered only if it lists it (docs/deployment.md)"
    return 0
  fi
  write_config "$config_file"
  echo "--config-file=$config_file"
}

# Launches dockerd with the given extra args and waits for it; returns 1 (daemon gone) on failure.
launch() {
  local pid config
  config="$(config_args)"
  # shellcheck disable=SC2086 # EXECMCP_DOCKERD_ARGS and $config are word lists on purpose
  $sudo setsid dockerd --host="unix://$socket" $config "$@" ${EXECMCP_DOCKERD_ARGS:-} >>"$log_file" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$pid_file"
  local waited=0
  while [ "$waited" -lt "$wait_secs" ]; do
    if engine_answers; then
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$pid_file"
      return 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  say "engine did not answer within ${wait_secs}s; stopping it"
  kill "$pid" 2>/dev/null || true
  rm -f "$pid_file"
  return 2
}

cmd_start() {
  if engine_answers; then
    echo "engine already running"
    return 0
  fi
  command -v dockerd >/dev/null 2>&1 || install_engine
  mkdir -p "$state_dir"
  # A stale socket from a killed daemon makes dockerd refuse to start.
  if [ -S "$socket" ] && ! pgrep -x dockerd >/dev/null 2>&1; then $sudo rm -f "$socket"; fi
  : >"$log_file"
  say "starting dockerd (log: $log_file)"
  # First let dockerd choose the storage driver: it keeps the one /var/lib/docker already uses and
  # otherwise prefers overlay2. Inside some sandboxes (overlayfs root, no nested overlay mounts) that
  # fails and dockerd exits; vfs always works (a full copy per layer: slower, bigger), so it is the
  # fallback. The driver that worked is remembered so later starts go straight to it.
  local drivers=(auto vfs)
  if [[ "${EXECMCP_DOCKERD_ARGS:-}" == *storage-driver* ]]; then
    drivers=(auto)
  elif [ -f "$driver_file" ] && [ "$(cat "$driver_file")" = vfs ]; then
    drivers=(vfs)
  fi
  local d rc
  for d in "${drivers[@]}"; do
    rc=0
    if [ "$d" = vfs ]; then
      say "starting with storage driver vfs"
      launch --storage-driver=vfs || rc=$?
    else
      launch || rc=$?
    fi
    if [ "$rc" -eq 0 ]; then
      echo "$d" >"$driver_file"
      say "engine running (pid $(cat "$pid_file"), storage driver $(docker info --format '{{.Driver}}' 2>/dev/null || echo '?'))"
      return 0
    fi
    [ "$rc" -eq 2 ] && break # hung, not refused: another driver will not help
  done
  say "dockerd failed to start; last lines of $log_file:"
  tail -n 30 "$log_file" >&2
  # Sandboxes without netfilter: containers with --network none still work without it.
  if grep -qi 'iptables' "$log_file"; then
    say "hint: no iptables here; try EXECMCP_DOCKERD_ARGS='--iptables=false' (bridge networking will have no NAT)"
  fi
  return 1
}

cmd_stop() {
  local pid
  if ! pid="$(our_pid)"; then
    rm -f "$pid_file"
    if engine_answers; then
      say "an engine is running but this script did not start it; leaving it alone"
    else
      say "no engine running"
    fi
    return 0
  fi
  # The engine is shared: others' containers would die with it, so that takes an explicit --force.
  local running
  running="$(docker ps -q 2>/dev/null | wc -l)"
  if [ "$running" -gt 0 ] && [ "$force" = 0 ]; then
    say "$running container(s) still running on this engine; not stopping it (use: stop --force)"
    return 1
  fi
  say "stopping dockerd (pid $pid)"
  $sudo kill -TERM "$pid"
  # dockerd stops its containers first (default 10 s each, in parallel), so allow a while.
  local waited=0
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 60 ]; do
    sleep 1
    waited=$((waited + 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "dockerd did not exit within 60s; killing it"
    $sudo kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pid_file"
  say "stopped"
}

cmd_status() {
  local pid=""
  pid="$(our_pid)" || pid=""
  if engine_answers; then
    local ver driver cg
    ver="$(docker version --format 'server {{.Server.Version}} (API {{.Server.APIVersion}}), client {{.Client.Version}}' 2>/dev/null || echo '?')"
    driver="$(docker info --format '{{.Driver}}' 2>/dev/null || echo '?')"
    cg="$(docker info --format '{{.CgroupVersion}}' 2>/dev/null || echo '?')"
    echo "engine running: $ver, storage driver $driver, cgroup v$cg"
    if [ -n "$pid" ]; then echo "started by this script (pid $pid, log $log_file)"; else echo "not started by this script"; fi
    echo "runtimes: $(docker info --format '{{range $name, $_ := .Runtimes}}{{$name}} {{end}}' 2>/dev/null || echo '?')"
    return 0
  fi
  echo "engine not running"
  return 1
}

# Tells, without asking any engine, whether `stop` would stop the engine this machine's clients use.
cmd_owns() {
  local pid
  if ! pid="$(our_pid)"; then
    echo "the engine was not started by this script (no live dockerd recorded in $pid_file)"
    return 1
  fi
  if [ "$DOCKER_HOST" != "unix://$socket" ]; then
    echo "DOCKER_HOST is $DOCKER_HOST, not the socket of the dockerd this script started (unix://$socket)"
    return 1
  fi
  echo "started by this script (pid $pid, socket $socket)"
}

# The config file a running dockerd reads: its --config-file, else dockerd's default.
daemon_config_of() {
  local pid="$1" arg next=0
  # Not root: the recorded pid is sudo's; its child is dockerd.
  if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sudo ]; then pid="$(pgrep -P "$pid" -x dockerd | head -n 1)"; fi
  while IFS= read -r -d '' arg; do
    if [ "$next" = 1 ]; then echo "$arg"; return 0; fi
    case "$arg" in
      --config-file=*) echo "${arg#--config-file=}"; return 0 ;;
      --config-file) next=1 ;;
    esac
  done <"/proc/$pid/cmdline"
  echo "$system_config"
}

# Registers runsc with the dockerd this script started, which keeps running: dockerd reloads
# `runtimes` (and nothing it was not given) from its config file on SIGHUP.
cmd_reload() {
  local pid file
  if ! pid="$(our_pid)"; then
    say "the engine was not started by this script; register runsc in its own config (docs/deployment.md)"
    return 1
  fi
  if ! command -v runsc >/dev/null 2>&1; then
    say "runsc is not installed (scripts/install-deps.sh --test installs it)"
    return 1
  fi
  file="$(daemon_config_of "$pid")"
  if [ "$file" = "$system_config" ] && [ -e "$system_config" ]; then
    # dockerd was started before this script had a config of its own, and reads the operator's.
    if ! grep -q '"runsc"' "$system_config"; then
      say "$system_config is the operator's config: add the runsc runtime there (docs/deployment.md), then run reload"
      return 1
    fi
  else
    # Ours, or dockerd's default path while nothing is there (an engine this script started
    # before it wrote configs): only `runtimes`, which is all a reload changes.
    $sudo mkdir -p "$(dirname "$file")"
    write_config "$file"
  fi
  say "reloading dockerd (pid $pid) from $file"
  $sudo kill -HUP "$pid"
  local waited=0
  while [ "$waited" -lt 10 ]; do
    if docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; then
      say "runsc registered"
      return 0
    fi
    sleep 1
    waited=$((waited + 1))
  done
  say "dockerd did not list runsc after the reload; see $log_file"
  return 1
}

force=0
[ "${2:-}" = --force ] && force=1
case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  owns) cmd_owns ;;
  reload) cmd_reload ;;
  -h | --help | help) sed -n '2,25p' "$0" ;;
  *)
    sed -n '2,25p' "$0" >&2
    exit 2
    ;;
esac
