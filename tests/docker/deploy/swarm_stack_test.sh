#!/usr/bin/env bash
# docker/swarm-server.yaml on a Swarm of its own (scripts/swarm-cluster.sh, 2 nodes: node 1 the
# manager, node 2 a worker): the server image from this build tree as a plain container on the
# manager (Compose), the docker-swarm backend placing a per-user sandbox as a service on the worker.
#   swarm_stack_test.sh REPO BUILD_DIR
# The config (one token as its hash, a per-user docker-swarm agent) is a file on node 1; the port is
# published on node 1 and reached from this host at node 1's address. /health 200; the warm pool
# (warm: 1) makes a sandbox before any call; a stateless 2026-07-28 tools/call with the token runs
# in it (the user claims it), its task on node 2 (its hostname is that task's container); a second
# call sees the file; the server killed and started
# again still finds the file and sweeps the dead process's sandbox; SIGTERM (`compose stop`)
# leaves no service, secret or network labelled execmcp.managed.
# Why not `docker stack deploy`: the Engine (20.10) cannot `network connect` a container that is a
# Swarm task to an overlay not yet on its node ("network ... not found"), and once one is, the
# connect gives a node-local address that collides with the cluster's; the server joins each
# sandbox's overlay, so it must be a plain container (docs/deployment.md).
set -euo pipefail
repo="$1"
build_dir="$2"
source "$(dirname "${BASH_SOURCE[0]}")/deploy_test_support.sh"
require_engine
compose="$(compose_cmd)"
[ -n "$compose" ] || skip "neither docker-compose nor 'docker compose' is installed (scripts/install-deps.sh --deploy)"
[ "$(id -u)" = 0 ] || skip "Compose reaches the swarm manager's engine through /proc/PID/root: run as root"
t_start=$SECONDS

server_image="execmcp/server:test"
# Not the swarm suite's :latest, which the ASan tree's runner builds: each tree its own tag.
sandbox_image="execmcp/swarm-runner-test:deploy"
build_image --server --from-build "$build_dir" -t "$server_image"
build_image --swarm-test --from-build "$build_dir" -t "$sandbox_image"
docker run --rm --entrypoint execmcp "$server_image" plugins 2>/dev/null | grep -q '^docker-swarm ' ||
  die "$server_image has no docker-swarm plugin: $(docker run --rm --entrypoint execmcp "$server_image" plugins 2>&1 | head -n 20)"
pass "$server_image lists the docker-swarm plugin"
t_images=$SECONDS

# The cluster: its own prefix, stopped at exit (the cleanups run in reverse order: last).
cluster="$repo/scripts/swarm-cluster.sh"
export EXECMCP_SWARM_PREFIX="execmcp-swarm-stack$$"
cleanups+=("$cluster stop")
set +e
cluster_out="$(nice "$cluster" start --nodes 2 2>&1)"
rc=$?
set -e
[ "$rc" = 77 ] && skip "no swarm cluster here: $(echo "$cluster_out" | tail -n 1)"
[ "$rc" = 0 ] || die "scripts/swarm-cluster.sh start failed: $(echo "$cluster_out" | tail -n 20)"
node1="$EXECMCP_SWARM_PREFIX-node1"
node2="$EXECMCP_SWARM_PREFIX-node2"
manager() { docker exec "$node1" "$@"; }
# The server's image only where the server runs (the manager), the sandboxes' on every node.
docker save "$server_image" | docker exec -i "$node1" docker load -q >/dev/null ||
  die "loading $server_image into $node1 failed"
"$cluster" load "$sandbox_image" >/dev/null || die "loading $sandbox_image into the nodes failed"
ip="$(docker inspect -f "{{(index .NetworkSettings.Networks \"$EXECMCP_SWARM_PREFIX-net\").IPAddress}}" "$node1")"
[ -n "$ip" ] || die "no address of $node1 on the cluster's network"
base="http://$ip:8000"
t_cluster=$SECONDS

# The config: one token kept as its hash, one per-user agent on the docker-swarm backend. The
# workspaces (each user's placement record) are in the state volume; owner_id is fixed, the server
# container (a task's hostname is its container's short id) is found by the backend itself.
agent=sw
token="token-$run_tag-$RANDOM$RANDOM"
token_hash="$(printf %s "$token" | sha256sum | cut -d' ' -f1)"
config="$(
  cat <<YAML
execmcp: 1
log_dir: /var/lib/execmcp/logs
audit_file: /var/lib/execmcp/audit.jsonl
server:
  tokens:
    - {name: alice, sha256: $token_hash, agents: [$agent]}
agents:
  - id: $agent
    per_user: {workspace_root: /var/lib/execmcp/users, warm: 1}
    backend:
      plugin: docker-swarm
      settings:
        image: "$sandbox_image"
        owner_id: execmcp-server
        constraints: ["node.role==worker"]
        memory: 128m
        start_timeout: 30
YAML
)"

mcp=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
  -H "Authorization: Bearer $token" -H 'MCP-Protocol-Version: 2026-07-28'
  -H 'Mcp-Method: tools/call' -H 'Mcp-Name: execute_command')
meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
# A stateless tools/call of execute_command; the response body goes to stdout.
call() {
  curl -sS --max-time 60 "${mcp[@]}" \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_command","arguments":{"command":"'"$1"'"},'"$meta"'}}' \
    "$base/mcp/$agent" 2>&1 || true
}
# The "stdout" of a call's structuredContent.
stdout_of() { python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["structuredContent"]["stdout"], end="")' 2>/dev/null || true; }

wait_health() {
  local what="$1"
  for _ in $(seq 120); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$base/health" 2>/dev/null)" = 200 ] && break
    sleep 0.5
  done
  expect_http "GET /health of $what at node 1's address ($base)" 200 '"ok"' "$base/health"
}

# What the backend made, on the manager: services, secrets, networks labelled execmcp.managed.
managed_left() {
  {
    manager docker service ls --format 'service {{.Name}}' --filter label=execmcp.managed
    manager docker secret ls --format 'secret {{.Name}}' --filter label=execmcp.managed
    manager docker network ls --format 'network {{.Name}}' --filter label=execmcp.managed
  } 2>/dev/null | tr '\n' ' ' | sed 's/ *$//'
}
wait_nothing_managed() {
  local what="$1" left=""
  for _ in $(seq 60); do
    left="$(managed_left)"
    [ -z "$left" ] && break
    sleep 0.5
  done
  [ -z "$left" ] && pass "$what: no service, secret or network labelled execmcp.managed is left" ||
    fail "$what: left on the manager: $left"
}

# The user's sandbox: one call that writes a file, run in the warm sandbox (its task on node 2), a
# second call that reads it.
# False, the first call's body in first_body, when that call did not run (the caller decides).
first_body=""
sandbox_flow() {
  local what="$1" out got host service task node cid
  out="$(call 'echo hi > f; cat f; hostname')"
  got="$(echo "$out" | stdout_of)"
  if [[ "$got" != hi$'\n'* ]]; then
    first_body="$out"
    return 1
  fi
  pass "$what: tools/call execute_command ran in the user's sandbox (2026-07-28, stateless)"
  host="$(echo "$got" | sed -n 2p)"
  # The user's service: the one whose running task's container is the command's host.
  user_service=""
  for service in $(manager docker service ls --filter label=execmcp.managed --format '{{.Name}}'); do
    task="$(manager docker service ps -q --filter desired-state=running "$service" 2>/dev/null | head -n 1)"
    cid="$(manager docker inspect -f '{{.Status.ContainerStatus.ContainerID}}' "$task" 2>/dev/null || true)"
    if [ -n "$host" ] && [ "${cid:0:12}" = "$host" ]; then
      user_service="$service"
      break
    fi
  done
  [ -n "$user_service" ] && pass "$what: the command's hostname is the task's container of service $user_service" ||
    fail "$what: no sandbox service's task runs in container '$host'"
  service="$user_service"
  [ "$service" = "$warm_service" ] && pass "$what: the user's first call claimed the warm sandbox $warm_service" ||
    fail "$what: the user's first call ran in '$service', not the warm sandbox '$warm_service'"
  node="$(manager docker inspect -f '{{.NodeID}}' "$task" 2>/dev/null || true)"
  node="$(manager docker node inspect -f '{{.Description.Hostname}}' "$node" 2>/dev/null || true)"
  [ "$node" = "$node2" ] && pass "$what: the sandbox's service $service runs its task on the worker $node" ||
    fail "$what: the sandbox's task runs on '$node', not $node2 (service '$service')"
  out="$(call 'cat f')"
  [ "$(echo "$out" | stdout_of)" = hi ] && pass "$what: a second call sees the file" ||
    fail "$what: the second call: ${out:0:400}"
}

# --- docker/swarm-server.yaml: the server as a plain container on the manager, by Compose ---
# Compose runs on this host and speaks to node 1's engine through its socket under /proc (the
# files the compose file names are node 1's: the config is copied there first).
echo "$config" | docker exec -i "$node1" sh -c 'mkdir -p /root/execmcp && cat >/root/execmcp/config.yaml'
node1_sock="unix:///proc/$(docker inspect -f '{{.State.Pid}}' "$node1")/root/run/docker.sock"
# shellcheck disable=SC2206 # $compose may be two words ("docker compose")
plain=(env DOCKER_HOST="$node1_sock" EXECMCP_CONFIG=/root/execmcp/config.yaml
  EXECMCP_SERVER_IMAGE="$server_image" $compose -p "$run_tag" -f "$repo/docker/swarm-server.yaml")
cleanups+=("${plain[*]} down -v --timeout 60")
t_compose=$SECONDS
"${plain[@]}" up -d >"/tmp/$run_tag.up.log" 2>&1 || die "compose up on $node1: $(cat "/tmp/$run_tag.up.log")"
rm -f "/tmp/$run_tag.up.log"
wait_health "docker/swarm-server.yaml's server"
# warm: 1: the pool makes a sandbox before any user calls (/metrics says when it is ready: made,
# its runner connected); the first user's call claims it.
warm_ready() {
  curl -s --max-time 2 -H "Authorization: Bearer $token" "$base/metrics" 2>/dev/null |
    grep -q "^execmcp_sandboxes_warm{agent=\"$agent\"} 1\$"
}
for _ in $(seq 120); do
  warm_ready && break
  sleep 0.25
done
warm_service="$(manager docker service ls --filter label=execmcp.managed --format '{{.Name}}' | head -n 1)"
warm_ready && pass "the warm pool made $warm_service before any call" ||
  fail "no warm sandbox was ready within 30 s (/metrics: $(curl -s --max-time 2 -H "Authorization: Bearer $token" "$base/metrics" | grep sandboxes_warm))"
sandbox_flow "docker/swarm-server.yaml" ||
  fail "docker/swarm-server.yaml: the first call did not run: ${first_body:0:600}"
server="$("${plain[@]}" ps -q execmcp 2>/dev/null | head -n 1)"

# A crashed server (SIGKILL: nothing removed) started again, as `restart: unless-stopped` does:
# the same container, owner_id and user. Its next start of a sandbox sweeps the dead process's
# objects (owner_id, owner pid gone), and the user's file is still there (the volume on node 2).
dead_service="$user_service"
manager docker kill "$server" >/dev/null 2>&1 || fail "docker kill of the server failed"
# The engine may start it again itself (restart: unless-stopped); else we do.
for _ in $(seq 40); do
  [ "$(manager docker inspect -f '{{.State.Running}}' "$server" 2>/dev/null)" = true ] && break
  manager docker start "$server" >/dev/null 2>&1 || true
  sleep 0.25
done
[ "$(manager docker inspect -f '{{.State.Running}}' "$server" 2>/dev/null)" = true ] ||
  fail "the killed server did not run again: $(manager docker inspect -f '{{.State.Status}} {{.State.Error}}' "$server" 2>&1)"
wait_health "the restarted server"
out="$(call 'cat f')"
[ "$(echo "$out" | stdout_of)" = hi ] && pass "after a crash and a restart the user's file is still there" ||
  fail "after a restart: ${out:0:400}"
# The sweep runs (and waits for the tasks to end) before that call's sandbox is placed.
gone=""
for _ in $(seq 4); do
  manager docker service inspect "$dead_service" >/dev/null 2>&1 || { gone=1; break; }
  sleep 0.5
done
[ -n "$gone" ] && pass "the restarted server removed the dead one's sandbox $dead_service (orphan sweep)" ||
  fail "the restarted server left the dead one's sandbox $dead_service (labels: $(manager docker service inspect -f '{{json .Spec.Labels}}' "$dead_service" 2>/dev/null))"

"${plain[@]}" stop >/dev/null 2>&1 || fail "compose stop failed"
code="$(manager docker inspect -f '{{.State.ExitCode}}' "$server" 2>/dev/null || true)"
[ "$code" = 0 ] && pass "SIGTERM: docker/swarm-server.yaml's server stopped with exit code 0" ||
  fail "the server stopped with '$code': $(manager docker logs --tail 10 "$server" 2>&1)"
wait_nothing_managed "compose stop (SIGTERM) of docker/swarm-server.yaml's server"
[ -z "$(managed_left)" ] || manager docker logs --tail 40 "$server" 2>&1 | sed 's/^/  server: /' >&2
"${plain[@]}" down -v >/dev/null 2>&1 || fail "compose down failed"

say "took $((SECONDS - t_start)) s: images $((t_images - t_start)) s, cluster and loads $((t_cluster - t_images)) s, the compose file $((SECONDS - t_compose)) s (the cluster's stop follows)"
finish
