#!/usr/bin/env bash
# A multi-node Docker Swarm on one machine: engines in containers (Debian's docker.io on the
# offline base, docker/swarm-node/), each in its own network namespace on a user-defined bridge
# network of the host engine (never the host's docker0), for the docker-swarm backend's tests and
# bench (issue 33). Everything it makes carries the label org.execmcp.swarm-cluster=PREFIX and a
# name starting with PREFIX, and only such things are ever removed.
#   scripts/swarm-cluster.sh start [--nodes N]  build the node image if needed, start N nodes (2 or
#                                  3, default 3: node1 the manager, the rest workers) and form the
#                                  swarm; prints how long that took
#   scripts/swarm-cluster.sh load IMAGE...      docker save | docker load of host images into every node
#   scripts/swarm-cluster.sh spike              the issue's experiment on a started cluster: a one-task
#                                  service pinned to the last worker (dnsrr, attachable overlay),
#                                  reached from a container on another node; prints the numbers
#   scripts/swarm-cluster.sh probes             what this kernel and engine allow: an encrypted overlay,
#                                  the service VIP, a secret in inspect, pinning a placed task
#   scripts/swarm-cluster.sh exec N CMD...      runs CMD in node N (e.g. `exec 1 docker node ls`)
#   scripts/swarm-cluster.sh status             the nodes and the swarm as the manager sees it
#   scripts/swarm-cluster.sh stop               removes the nodes, their volumes and their network
# Exit 77 (with the reason on stderr) where the node containers cannot start here: a test then
# skips and says why.
# Environment:
#   EXECMCP_SWARM_PREFIX      names and label value (default execmcp-swarm); tests use one per process
#   EXECMCP_SWARM_NODE_IMAGE  the node image (default execmcp/swarm-node:bookworm)
#   EXECMCP_SWARM_IMAGE       the image spike and probes run (default execmcp/runtime:latest)
#   EXECMCP_SWARM_WAIT        seconds to wait for an inner engine (default 60)
#   EXECMCP_SWARM_DOCKERD_ARGS  more arguments for every inner dockerd
#   EXECMCP_SWARM_DATA        where each inner engine keeps images and containers: tmpfs (default:
#                             memory, about 0.3-0.5 GB a node with the runtime image; fast to
#                             load and to remove) or volume (a labelled volume a node: disk, and
#                             removing it takes tens of seconds)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
prefix="${EXECMCP_SWARM_PREFIX:-execmcp-swarm}"
node_image="${EXECMCP_SWARM_NODE_IMAGE:-execmcp/swarm-node:bookworm}"
base_image="execmcp/debian-base:bookworm"
work_image="${EXECMCP_SWARM_IMAGE:-execmcp/runtime:latest}"
wait_secs="${EXECMCP_SWARM_WAIT:-60}"
data_on="${EXECMCP_SWARM_DATA:-tmpfs}"
label="org.execmcp.swarm-cluster"
hash_label="org.execmcp.build-hash"
network="$prefix-net"
overlay="$prefix-overlay"

say() { echo "swarm-cluster: $*" >&2; }
die() {
  say "$*"
  exit 1
}
skip() {
  say "skip: $*"
  exit 77
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

case "$data_on" in tmpfs | volume) ;; *) die "EXECMCP_SWARM_DATA is tmpfs or volume, not '$data_on'" ;; esac
[[ "$prefix" =~ ^[a-z0-9][a-z0-9_.-]{0,40}$ ]] || die "EXECMCP_SWARM_PREFIX '$prefix' must be [a-z0-9][a-z0-9_.-]*, at most 41 characters"

node_name() { echo "$prefix-node$1"; }
# The nodes that exist (running or not), by number.
node_numbers() {
  docker ps -a --filter "label=$label=$prefix" --format '{{.Names}}' |
    sed -n "s/^$prefix-node\([0-9]*\)$/\1/p" | sort -n
}
in_node() {
  local n="$1"
  shift
  docker exec "$(node_name "$n")" "$@"
}
manager() { in_node 1 "$@"; }
node_ip() {
  docker inspect -f "{{(index .NetworkSettings.Networks \"$network\").IPAddress}}" "$(node_name "$1")"
}
# True when the object (container, volume or network) $2 of kind $1 carries our label.
ours() {
  local value
  value="$(docker "$1" inspect -f "{{ index .Labels \"$label\" }}" "$2" 2>/dev/null ||
    docker "$1" inspect -f "{{ index .Config.Labels \"$label\" }}" "$2" 2>/dev/null || true)"
  [ "$value" = "$prefix" ]
}

need_engine() {
  command -v docker >/dev/null 2>&1 || skip "no docker CLI"
  docker version >/dev/null 2>&1 || skip "no Docker engine answers (scripts/docker-engine.sh start)"
}

# Builds the node image unless one with the same inputs exists.
build_node_image() {
  local dir="$repo/docker/swarm-node" base_id hash have
  docker image inspect "$base_image" >/dev/null 2>&1 ||
    skip "the base image $base_image is missing (docker/make-base-image.sh makes it offline)"
  base_id="$(docker image inspect -f '{{.Id}}' "$base_image")"
  hash="$(cat "$dir/Dockerfile" "$dir/node-entrypoint.sh" <(echo "$base_id") | sha256sum | cut -c1-32)"
  have="$(docker image inspect -f "{{ index .Config.Labels \"$hash_label\" }}" "$node_image" 2>/dev/null || true)"
  [ "$have" = "$hash" ] && return 0
  say "building $node_image (Debian's docker.io on $base_image)"
  local start=$SECONDS
  local log
  log="$(mktemp)"
  if ! tar -C "$dir" -c Dockerfile node-entrypoint.sh |
    docker build -q --tag "$node_image" --label "$hash_label=$hash" \
      --build-arg "BASE_IMAGE=$base_image" - >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    rm -f "$log"
    skip "building $node_image failed (it needs Debian's package mirror)"
  fi
  rm -f "$log"
  say "built $node_image in $((SECONDS - start))s ($(docker image inspect -f '{{.Size}}' "$node_image" | awk '{printf "%.0f MB", $1/1e6}'))"
}

make_network() {
  if docker network inspect "$network" >/dev/null 2>&1; then
    ours network "$network" || die "a network named $network exists and is not ours; set EXECMCP_SWARM_PREFIX"
    return 0
  fi
  docker network create --driver bridge --label "$label=$prefix" "$network" >/dev/null
}

# Starts node $1; its inner dockerd keeps its state in a tmpfs or a volume of its own (overlay2
# cannot sit on the container's own overlay filesystem).
run_node() {
  local n="$1" name
  name="$(node_name "$n")"
  if docker container inspect "$name" >/dev/null 2>&1; then
    ours container "$name" || die "a container named $name exists and is not ours"
    docker start "$name" >/dev/null
    return 0
  fi
  # shellcheck disable=SC2054 # the commas are the tmpfs options
  local data=(--tmpfs /var/lib/docker:exec,mode=0711)
  if [ "$data_on" = volume ]; then
    docker volume create --label "$label=$prefix" "$name-data" >/dev/null
    data=(-v "$name-data:/var/lib/docker")
  fi
  docker run -d --name "$name" --hostname "$name" --label "$label=$prefix" \
    --network "$network" \
    --cap-add ALL --cap-drop SYS_RESOURCE \
    --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
    --device-cgroup-rule 'a *:* rwm' --cgroupns private \
    --tmpfs /run --tmpfs /tmp \
    "${data[@]}" -e "SWARM_NODE_DOCKERD_ARGS=${EXECMCP_SWARM_DOCKERD_ARGS:-}" \
    "$node_image" >/dev/null
}

# Waits for node $1's inner engine; false (and its log's end on stderr) when it does not answer.
wait_engine() {
  local n="$1" name waited=0
  name="$(node_name "$n")"
  while [ "$waited" -lt $((wait_secs * 10)) ]; do
    docker exec "$name" docker version >/dev/null 2>&1 && return 0
    if [ "$(docker inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" != true ]; then break; fi
    sleep 0.1
    waited=$((waited + 1))
  done
  say "the engine in $name did not answer; the end of its log:"
  docker logs --tail 20 "$name" 2>&1 | sed 's/^/  /' >&2
  return 1
}

cmd_start() {
  local nodes=3
  while [ $# -gt 0 ]; do
    case "$1" in
      --nodes) nodes="${2:?--nodes needs a number}"; shift 2 ;;
      *) die "start: unknown option '$1'" ;;
    esac
  done
  [[ "$nodes" =~ ^[23]$ ]] || die "--nodes is 2 or 3"
  need_engine
  build_node_image
  make_network
  local t0 n
  t0="$(now_ms)"
  for n in $(seq 1 "$nodes"); do run_node "$n" || { cmd_stop; skip "the node container $(node_name "$n") cannot start here"; }; done
  for n in $(seq 1 "$nodes"); do
    wait_engine "$n" || { cmd_stop; skip "the engine in $(node_name "$n") did not start (see its log above)"; }
  done
  local t_engines t_swarm
  t_engines="$(now_ms)"
  if [ "$(manager docker info -f '{{.Swarm.LocalNodeState}}')" != active ]; then
    manager docker swarm init --advertise-addr "$(node_ip 1)" >/dev/null
  fi
  local token
  token="$(manager docker swarm join-token -q worker)"
  for n in $(seq 2 "$nodes"); do
    if [ "$(in_node "$n" docker info -f '{{.Swarm.LocalNodeState}}')" != active ]; then
      in_node "$n" docker swarm join --token "$token" --advertise-addr "$(node_ip "$n")" "$(node_ip 1):2377" >/dev/null
    fi
  done
  local waited=0
  while [ "$(manager docker node ls --format '{{.Status}}' | grep -c Ready)" -lt "$nodes" ]; do
    [ "$waited" -lt 600 ] || die "the swarm did not have $nodes ready nodes within 60 s"
    sleep 0.1
    waited=$((waited + 1))
  done
  t_swarm="$(now_ms)"
  echo "nodes: $nodes; engines answering after $((t_engines - t0)) ms; swarm formed (init, joins, all Ready) in $((t_swarm - t_engines)) ms; total $((t_swarm - t0)) ms"
}

cmd_load() {
  [ $# -gt 0 ] || die "load: name at least one image"
  local nodes=() n t0
  mapfile -t nodes < <(node_numbers)
  [ "${#nodes[@]}" -gt 0 ] || die "no nodes; run start first"
  t0="$(now_ms)"
  # One `docker save`, fed to every node's `docker load` at once.
  local sinks=()
  for n in "${nodes[@]}"; do sinks+=(">(docker exec -i $(node_name "$n") docker load -q >/dev/null)"); done
  eval "docker save $(printf '%q ' "$@") | tee ${sinks[*]} >/dev/null"
  # The loads finish after tee: wait until every node has every image.
  local image
  for n in "${nodes[@]}"; do
    for image in "$@"; do
      local waited=0
      until in_node "$n" docker image inspect "$image" >/dev/null 2>&1; do
        [ "$waited" -lt 1200 ] || die "node $n did not load $image"
        sleep 0.1
        waited=$((waited + 1))
      done
    done
  done
  echo "loaded $* into ${#nodes[@]} nodes in $(($(now_ms) - t0)) ms"
}

# The HTTP server and client of the spike (python3 of the work image): the server answers 3 bytes
# on a kept connection; the client times requests on one connection, then on a new one each.
read -r -d '' server_py <<'EOF' || true
import http.server
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("", 8080), H).serve_forever()
EOF
read -r -d '' client_py <<'EOF' || true
import http.client, socket, statistics, sys, time
host, n = sys.argv[1], int(sys.argv[2])
deadline = time.time() + 30
while True:
    try:
        addr = socket.getaddrinfo(host, 8080, socket.AF_INET)[0][4][0]
        c = http.client.HTTPConnection(addr, 8080, timeout=5)
        c.request("GET", "/"); c.getresponse().read()
        break
    except Exception as e:
        if time.time() > deadline:
            sys.exit(f"cannot reach {host}: {e}")
        time.sleep(0.1)
c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
def pct(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(p * len(xs)))] * 1000
kept = []
for _ in range(n):
    t = time.perf_counter(); c.request("GET", "/"); c.getresponse().read(); kept.append(time.perf_counter() - t)
fresh = []
for _ in range(n):
    t = time.perf_counter()
    d = http.client.HTTPConnection(addr, 8080, timeout=5); d.request("GET", "/"); d.getresponse().read(); d.close()
    fresh.append(time.perf_counter() - t)
print(f"{host} = {addr}: {n} requests; kept connection p50 {pct(kept, .5):.3f} ms p90 {pct(kept, .9):.3f} ms; "
      f"new connection each p50 {pct(fresh, .5):.3f} ms p90 {pct(fresh, .9):.3f} ms")
EOF

# RFC 3339 time (the engine's) to milliseconds.
engine_ms() { local t="${1//\"/}"; echo $(($(date -d "$t" +%s%N) / 1000000)); }

cmd_spike() {
  local nodes=() last client_node
  mapfile -t nodes < <(node_numbers)
  [ "${#nodes[@]}" -ge 2 ] || die "no cluster; run start first"
  last="${nodes[-1]}"
  client_node=1
  [ "${#nodes[@]}" -ge 3 ] && client_node=2
  in_node "$last" docker image inspect "$work_image" >/dev/null 2>&1 || cmd_load "$work_image"
  manager docker network inspect "$overlay" >/dev/null 2>&1 ||
    manager docker network create --driver overlay --attachable --label "$label=$prefix" "$overlay" >/dev/null
  manager docker service rm spike-web >/dev/null 2>&1 || true
  local t0 t1 created running task
  t0="$(now_ms)"
  manager docker service create -d -q --no-resolve-image --name spike-web --label "$label=$prefix" \
    --endpoint-mode dnsrr --network "$overlay" --restart-condition none \
    --constraint "node.hostname==$(node_name "$last")" \
    --limit-memory 256m --limit-cpu 0.5 --limit-pids 128 \
    "$work_image" python3 -c "$server_py" >/dev/null
  local waited=0
  until manager docker service ps --filter desired-state=running --format '{{.CurrentState}}' spike-web | grep -q '^Running'; do
    [ "$waited" -lt 600 ] || die "spike-web did not run within 60 s: $(manager docker service ps --no-trunc spike-web)"
    sleep 0.05
    waited=$((waited + 1))
  done
  t1="$(now_ms)"
  task="$(manager docker service ps -q --filter desired-state=running spike-web | head -n 1)"
  created="$(engine_ms "$(manager docker service inspect -f '{{json .CreatedAt}}' spike-web)")"
  running="$(engine_ms "$(manager docker inspect -f '{{json .Status.Timestamp}}' "$task")")"
  local on
  on="$(manager docker node inspect -f '{{.Description.Hostname}}' "$(manager docker inspect -f '{{.NodeID}}' "$task")")"
  echo "service create to task running: $((t1 - t0)) ms as the CLI saw it (polling every 50 ms), $((running - created)) ms by the engine's times; on $on"
  local cid
  cid="$(manager docker inspect -f '{{.Status.ContainerStatus.ContainerID}}' "$task")"
  echo "task limits (memory bytes, nano CPUs, pids): $(in_node "$last" docker inspect -f '{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}} {{.HostConfig.PidsLimit}}' "$cid")"
  echo "from $(node_name "$client_node") over the overlay:"
  in_node "$client_node" docker run --rm --network "$overlay" "$work_image" \
    python3 -c "$client_py" spike-web 500
  echo "baseline, loopback in one container on $(node_name "$client_node"):"
  # shellcheck disable=SC2016 # expanded by the container's shell
  in_node "$client_node" docker run --rm --network none -e "SERVER_PY=$server_py" -e "CLIENT_PY=$client_py" \
    "$work_image" sh -c 'python3 -c "$SERVER_PY" & python3 -c "$CLIENT_PY" 127.0.0.1 500; kill $!'
  # The server's seat in tests and the bench: a process of the host in the network namespace of a
  # container on node 1 that is on the overlay, its engine reached through node 1's socket.
  local pid key ip
  manager docker rm -f spike-shim >/dev/null 2>&1 || true
  manager docker run -d --name spike-shim --network "$overlay" "$work_image" sleep 600 >/dev/null
  pid="$(docker inspect -f '{{.State.Pid}}' "$(node_name 1)")"
  key="$(manager docker inspect -f '{{.NetworkSettings.SandboxKey}}' spike-shim)"
  # /var/run is a symlink to /run there, and an absolute link under /proc/PID/root resolves in
  # the host's root, not the node's.
  key="/run${key#/var/run}"
  ip="$(manager docker inspect -f "{{range .NetworksAttachments}}{{if eq .Network.Spec.Name \"$overlay\"}}{{index .Addresses 0}}{{end}}{{end}}" "$task")"
  ip="${ip%/*}"
  echo "node 1's engine from the host through /proc/$pid/root/run/docker.sock: $(curl -fsS --unix-socket "/proc/$pid/root/run/docker.sock" http://engine/_ping || echo unreachable)"
  if command -v nsenter >/dev/null && command -v python3 >/dev/null; then
    echo "from a host process in spike-shim's network namespace (node 1), to the task's address:"
    nsenter --net="/proc/$pid/root$key" python3 -c "$client_py" "$ip" 500 ||
      echo "  (failed: nsenter into /proc/$pid/root$key)"
  fi
  manager docker rm -f spike-shim >/dev/null
  manager docker service rm spike-web >/dev/null
}

# What this kernel and engine allow, each a line.
cmd_probes() {
  local nodes=() last client_node
  mapfile -t nodes < <(node_numbers)
  [ "${#nodes[@]}" -ge 2 ] || die "no cluster; run start first"
  last="${nodes[-1]}"
  client_node=1
  [ "${#nodes[@]}" -ge 3 ] && client_node=2
  # A secret's value in the service's and the task's inspect, and in the container's.
  local value
  value="probe-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  manager docker secret rm probe-secret >/dev/null 2>&1 || true
  printf "%s" "$value" | docker exec -i "$(node_name 1)" docker secret create --label "$label=$prefix" probe-secret - >/dev/null
  manager docker service rm probe-secret-svc >/dev/null 2>&1 || true
  manager docker service create -d -q --no-resolve-image --name probe-secret-svc --restart-condition none \
    --secret source=probe-secret,target=runner-key,uid=1000,gid=1000,mode=0400 \
    --constraint "node.hostname==$(node_name "$last")" "$work_image" sleep 600 >/dev/null
  local waited=0 task cid
  until task="$(manager docker service ps -q --filter desired-state=running probe-secret-svc | head -n 1)" &&
    [ -n "$task" ] && cid="$(manager docker inspect -f '{{.Status.ContainerStatus.ContainerID}}' "$task" 2>/dev/null)" && [ -n "$cid" ]; do
    [ "$waited" -lt 300 ] || die "probe-secret-svc did not start"
    sleep 0.1
    waited=$((waited + 1))
  done
  sleep 1
  local seen=0
  manager docker service inspect probe-secret-svc | grep -q "$value" && seen=$((seen + 1))
  manager docker inspect "$task" | grep -q "$value" && seen=$((seen + 1))
  in_node "$last" docker inspect "$cid" | grep -q "$value" && seen=$((seen + 1))
  echo "secret: its value in inspect of service, task, container: $seen of 3; in the task as $(in_node "$last" docker exec "$cid" stat -c '%U %a' /run/secrets/runner-key), reads back equal: $([ "$(in_node "$last" docker exec "$cid" cat /run/secrets/runner-key)" = "$value" ] && echo yes || echo no)"
  manager docker service rm probe-secret-svc >/dev/null
  sleep 1
  manager docker secret rm probe-secret >/dev/null 2>&1 || true

  probe_pin "$last"
  # The service's VIP (needs ip_vs in the kernel) and an encrypted overlay (needs ESP).
  manager docker network inspect "$overlay" >/dev/null 2>&1 ||
    manager docker network create --driver overlay --attachable --label "$label=$prefix" "$overlay" >/dev/null
  probe_reach "VIP on the plain overlay" "$overlay" vip "$last" "$client_node"
  manager docker network rm "$prefix-enc" >/dev/null 2>&1 || true
  if manager docker network create --driver overlay --attachable --opt encrypted --label "$label=$prefix" "$prefix-enc" >/dev/null 2>&1; then
    probe_reach "dnsrr on an encrypted overlay" "$prefix-enc" dnsrr "$last" "$client_node"
    manager docker network rm "$prefix-enc" >/dev/null 2>&1 || true
  else
    echo "encrypted overlay: cannot be created"
  fi
}

# One line: whether pinning a running service to its node (a constraints-only update) keeps its task.
probe_pin() {
  local task1 task2 node waited=0
  manager docker service rm probe-pin >/dev/null 2>&1 || true
  manager docker service create -d -q --no-resolve-image --name probe-pin --restart-condition none \
    --constraint "node.role==worker" "$work_image" sleep 600 >/dev/null
  until task1="$(manager docker service ps -q --filter desired-state=running probe-pin | head -n 1)" &&
    [ -n "$task1" ] && [ "$(manager docker inspect -f '{{.Status.State}}' "$task1")" = running ]; do
    [ "$waited" -lt 300 ] || die "probe-pin did not run"
    sleep 0.1
    waited=$((waited + 1))
  done
  node="$(manager docker inspect -f '{{.NodeID}}' "$task1")"
  manager docker service update -d -q --constraint-add "node.id==$node" probe-pin >/dev/null
  sleep 5
  task2="$(manager docker service ps -q --filter desired-state=running probe-pin | head -n 1)"
  if [ "$task1" = "$task2" ]; then
    echo "pin after placement (constraint node.id==its node added): the task kept running ($task1)"
  else
    echo "pin after placement: the task was replaced ($task1 -> $task2)"
  fi
  manager docker service rm probe-pin >/dev/null
}

# One line: whether a client on node $5 reaches a service in mode $3 on network $2 pinned to node $4.
probe_reach() {
  local what="$1" net="$2" mode="$3" on="$4" from="$5" out
  manager docker service rm probe-web >/dev/null 2>&1 || true
  manager docker service create -d -q --no-resolve-image --name probe-web --endpoint-mode "$mode" --network "$net" \
    --restart-condition none --constraint "node.hostname==$(node_name "$on")" \
    "$work_image" python3 -c "$server_py" >/dev/null
  if out="$(in_node "$from" timeout 60 docker run --rm --network "$net" "$work_image" \
    timeout 20 python3 -c "$client_py" probe-web 20 2>&1)"; then
    echo "$what: reached ($out)"
  else
    out="$(echo "$out" | tail -n 1)"
    echo "$what: NOT reached (${out:-no answer within 20 s})"
  fi
  manager docker service rm probe-web >/dev/null 2>&1 || true
}

cmd_exec() {
  local n="${1:?exec: name a node number}"
  shift
  in_node "$n" "$@"
}

cmd_status() {
  need_engine
  local nodes=() n
  mapfile -t nodes < <(node_numbers)
  if [ "${#nodes[@]}" = 0 ]; then
    echo "no nodes with the prefix $prefix"
    return 1
  fi
  for n in "${nodes[@]}"; do
    echo "$(node_name "$n"): $(docker inspect -f '{{.State.Status}}' "$(node_name "$n")"), $(node_ip "$n" 2>/dev/null || echo '?'), swarm $(in_node "$n" docker info -f '{{.Swarm.LocalNodeState}}' 2>/dev/null || echo '?')"
  done
  manager docker node ls 2>/dev/null || true
}

cmd_stop() {
  local name
  for name in $(docker ps -a --filter "label=$label=$prefix" --format '{{.Names}}'); do
    case "$name" in "$prefix"-*) docker rm -f -v "$name" >/dev/null ;; esac
  done
  for name in $(docker volume ls -q --filter "label=$label=$prefix"); do
    case "$name" in "$prefix"-*) docker volume rm "$name" >/dev/null ;; esac
  done
  if docker network inspect "$network" >/dev/null 2>&1 && ours network "$network"; then
    docker network rm "$network" >/dev/null
  fi
  say "removed the nodes, volumes and network of $prefix"
}

case "${1:-}" in
  start) shift; cmd_start "$@" ;;
  load) shift; cmd_load "$@" ;;
  spike) cmd_spike ;;
  probes) cmd_probes ;;
  exec) shift; cmd_exec "$@" ;;
  status) cmd_status ;;
  stop) need_engine; cmd_stop ;;
  -h | --help | help) sed -n '2,30p' "$0" ;;
  *)
    sed -n '2,30p' "$0" >&2
    exit 2
    ;;
esac
