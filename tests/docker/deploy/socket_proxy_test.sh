#!/usr/bin/env bash
# Builds the socket proxy image, runs it on the real engine (published on loopback only), and
# checks that the calls the docker-api backend makes get through and everything else gets 403.
#   socket_proxy_test.sh REPO EXECMCP_BINARY
set -euo pipefail
repo="$1"
execmcp="$2"
source "$(dirname "${BASH_SOURCE[0]}")/deploy_test_support.sh"
require_engine

image="execmcp/proxy:test"
build_image --proxy -t "$image"
build_image --runtime

proxy="execmcp_proxy_$run_tag"
docker run -d --name "$proxy" -v /var/run/docker.sock:/var/run/docker.sock:ro \
  -p 127.0.0.1::2375 "$image" >/dev/null
cleanups+=("docker rm -f $proxy")
port="$(docker port "$proxy" 2375/tcp | head -n 1 | sed 's/.*://')"
p="http://127.0.0.1:$port"
for _ in $(seq 50); do curl -fsS --max-time 2 "$p/_ping" >/dev/null 2>&1 && break; sleep 0.2; done

# --- what the backend needs gets through (the engine answers, not the proxy) ---
expect_http "GET /_ping" 200 OK "$p/_ping"
expect_http "GET /v1.41/_ping (version prefix)" 200 OK "$p/v1.41/_ping"
expect_http "GET /version" 200 '"ApiVersion"' "$p/version"
expect_http "GET images/{name}/json" 200 '"RepoTags"' "$p/v1.41/images/execmcp/runtime:latest/json"
managed='%7B%22label%22%3A%5B%22execmcp.managed%3Dtrue%22%5D%7D'
expect_http "GET containers/json, execmcp label filter" 200 '[' \
  "$p/v1.41/containers/json?all=1&filters=$managed"
expect_http "GET containers/{execmcp-name}/json reaches the engine (404 from it)" 404 \
  'No such container' "$p/v1.41/containers/execmcp-no-such-$run_tag/json"

expect_http "POST containers/{execmcp-name}/stop reaches the engine (404 from it)" 404 \
  'No such container' -X POST "$p/v1.41/containers/execmcp-no-such-$run_tag/stop?t=10"

# --- everything else is refused by the proxy, with a body that says so ---
expect_http "POST stop on a container not named execmcp-" 403 "$denied_text" \
  -X POST "$p/v1.41/containers/$proxy/stop?t=10"
expect_http "POST stop with another query" 403 "$denied_text" \
  -X POST "$p/v1.41/containers/execmcp-x/stop?t=10&signal=SIGKILL"
expect_http "POST /v1.43/build" 403 "$denied_text" -X POST "$p/v1.43/build"
expect_http "GET /v1.43/secrets" 403 "$denied_text" "$p/v1.43/secrets"
expect_http "POST /swarm/init" 403 "$denied_text" -X POST "$p/swarm/init"
expect_http "GET containers/json without the label filter" 403 "$denied_text" \
  "$p/v1.41/containers/json?all=1"
expect_http "GET containers/json, filter plus a second label object" 403 "$denied_text" \
  "$p/v1.41/containers/json?all=1&filters=$managed&filters=%7B%7D"
expect_http "POST containers/create with a foreign name" 403 "$denied_text" \
  -X POST -H 'Content-Type: application/json' -d '{"Image":"execmcp/runtime:latest"}' \
  "$p/v1.41/containers/create?name=not-execmcp"
expect_http "POST containers/create with an escaped duplicate name" 403 "$denied_text" \
  -X POST -H 'Content-Type: application/json' -d '{"Image":"execmcp/runtime:latest"}' \
  "$p/v1.41/containers/create?n%61me=evil&name=execmcp-x"
expect_http "POST exec on a container not named execmcp-" 403 "$denied_text" \
  -X POST -H 'Content-Type: application/json' -d '{"Cmd":["id"]}' "$p/v1.41/containers/$proxy/exec"
expect_http "GET a dot-dot path" 403 "$denied_text" --path-as-is \
  "$p/v1.41/images/x/../../containers/$proxy/json"
expect_http "GET an empty segment" 403 "$denied_text" --path-as-is "$p/v1.41//info"
expect_http "GET containers/{id}/archive" 403 "$denied_text" \
  "$p/v1.41/containers/execmcp-x/archive?path=/etc/passwd"
expect_http "PUT containers/{id}/archive outside /.execmcp" 403 "$denied_text" -X PUT \
  -H 'Content-Type: application/x-tar' --data-binary '' \
  "$p/v1.41/containers/execmcp-x/archive?path=%2Fetc"
expect_http "GET containers/{id}/archive of the CA bundle with a second path" 403 "$denied_text" \
  "$p/v1.41/containers/execmcp-x/archive?path=%2Fetc%2Fssl%2Fcerts%2Fca-certificates.crt&path=%2Fetc"
expect_http "PUT containers/{id}/archive beside /.execmcp-trust" 403 "$denied_text" -X PUT \
  -H 'Content-Type: application/x-tar' --data-binary '' \
  "$p/v1.41/containers/execmcp-x/archive?path=%2F.execmcp-trusted"
expect_http "PUT containers/{id}/archive with a second path" 403 "$denied_text" -X PUT \
  -H 'Content-Type: application/x-tar' --data-binary '' \
  "$p/v1.41/containers/execmcp-x/archive?path=%2F.execmcp&path=%2Fetc"
expect_http "POST containers/{id}/attach" 403 "$denied_text" -X POST \
  "$p/v1.41/containers/execmcp-x/attach?stream=1&stdin=1"
expect_http "GET /events" 403 "$denied_text" "$p/v1.41/events"
expect_http "DELETE images/{name}" 403 "$denied_text" -X DELETE "$p/v1.41/images/execmcp/runtime:latest"

# The docker CLI shows the proxy's message as the daemon's error.
if out="$(DOCKER_HOST="tcp://127.0.0.1:$port" docker ps 2>&1)"; then
  fail "docker ps through the proxy succeeded: $out"
elif [[ "$out" == *"$denied_text"* ]]; then
  pass "docker ps through the proxy fails with the proxy's message"
else
  fail "docker ps through the proxy failed without the proxy's message: $out"
fi

# --- the proxy itself: unprivileged, with the socket's group only ---
status="$(docker exec "$proxy" cat /proc/1/status)"
socket_gid="$(stat -c %g /var/run/docker.sock)"
grep -Eq '^Uid:[[:space:]]+[1-9]' <<<"$status" && pass "haproxy runs as a non-root uid" ||
  fail "haproxy runs as root: $(grep '^Uid' <<<"$status")"
grep -Eq "^Groups:.*\\b$socket_gid\\b" <<<"$status" && pass "haproxy has the socket's group $socket_gid" ||
  fail "haproxy lacks the socket's group $socket_gid: $(grep '^Groups' <<<"$status")"
grep -Eq '^CapEff:[[:space:]]+0+$' <<<"$status" && grep -Eq '^CapBnd:[[:space:]]+0+$' <<<"$status" &&
  pass "haproxy holds no capabilities" || fail "haproxy holds capabilities: $(grep '^Cap' <<<"$status")"

# --- the real backend through the proxy: every call it makes for a command and a timeout ---
log_before="$(docker logs "$proxy" 2>&1 | wc -l)"
work="$(mktemp -d)"
cleanups+=("rm -rf $work")
agent="proxy_$run_tag"
mkdir -p "$work/ws"
cat >"$work/config.yaml" <<YAML
execmcp: 1
log_dir: $work/logs
agents:
  - id: $agent
    cwd: $work/ws
    backend:
      plugin: docker-api
      settings: {docker_host: "tcp://127.0.0.1:$port"}
YAML
cleanups+=("docker ps -aq --filter label=execmcp.agent=$agent | xargs -r docker rm -f")
out="$("$execmcp" exec --config "$work/config.yaml" --agent "$agent" -- \
  'echo through-the-proxy > note; cat note; id -u' 2>"$work/exec.log")" || true
if [[ "$out" == *through-the-proxy* ]] && [ "$(cat "$work/ws/note" 2>/dev/null)" = through-the-proxy ]; then
  pass "a docker-api command ran through the proxy"
  # Debian's HAProxy (2.6) refuses to upgrade a request with a body (HAProxy issue #2684), so the
  # exec stream carries nothing inward: execmcp-runner cannot be reached, and the backend says so
  # and runs the command as one exec (docs/deployment.md, "Exec streams through the proxy").
  if grep -q "not 101 Switching Protocols" "$work/exec.log"; then
    pass "through the proxy, the backend saw that exec streams are not upgraded and fell back"
  else
    fail "no fallback notice through the proxy (did HAProxy start upgrading? then drop this check and expect the runner): $(cat "$work/exec.log")"
  fi
else
  fail "a docker-api command through the proxy: output '$out'; log: $(cat "$work/exec.log")"
fi
out="$("$execmcp" exec --config "$work/config.yaml" --agent "$agent" --timeout 1 -- 'sleep 30' 2>&1)" || true
[[ "$out" == *"timed out"* ]] && pass "a timed-out command was stopped through the proxy" ||
  fail "a timed-out command through the proxy: $out"
left="$(docker ps -aq --filter "label=execmcp.agent=$agent")"
[ -z "$left" ] && pass "the agent's container was removed through the proxy" ||
  fail "containers left behind: $left"
# None of the backend's own calls may have been refused (HAProxy's log: timers, then the status).
refused="$(docker logs "$proxy" 2>&1 | tail -n +"$((log_before + 1))" |
  grep -E ' -?[0-9]+/-?[0-9]+/-?[0-9]+/-?[0-9]+/-?[0-9]+ 403 ' || true)"
[ -z "$refused" ] && pass "no call of the backend was refused" ||
  fail "the proxy refused calls the backend made: $refused"

# A backend call the proxy refuses (here: a proxy without the exec allow line, as when the backend
# starts calling an endpoint haproxy.cfg lacks) fails the command with the proxy's message.
narrow="$(mktemp -d)"
cleanups+=("rm -rf $narrow")
chmod 755 "$narrow"
grep -v '/exec\$ }$' "$repo/docker/proxy/haproxy.cfg" | grep -v '^ *#' >"$narrow/haproxy.cfg"
chmod 644 "$narrow/haproxy.cfg"
grep -q '/exec/' "$narrow/haproxy.cfg" && ! grep -q '/exec\$ }$' "$narrow/haproxy.cfg" ||
  fail "could not drop the exec line from haproxy.cfg"
docker run -d --name "${proxy}_narrow" -v /var/run/docker.sock:/var/run/docker.sock:ro \
  -v "$narrow/haproxy.cfg:/etc/haproxy/execmcp-proxy.cfg:ro" -p 127.0.0.1::2375 "$image" >/dev/null
cleanups+=("docker rm -f ${proxy}_narrow")
narrow_port="$(docker port "${proxy}_narrow" 2375/tcp | head -n 1 | sed 's/.*://')"
for _ in $(seq 50); do curl -fsS --max-time 2 "http://127.0.0.1:$narrow_port/_ping" >/dev/null 2>&1 && break; sleep 0.2; done
sed "s/127.0.0.1:$port/127.0.0.1:$narrow_port/" "$work/config.yaml" >"$work/narrow.yaml"
code=0
out="$("$execmcp" exec --config "$work/narrow.yaml" --agent "$agent" -- 'echo never' 2>&1)" || code=$?
[ "$code" = 125 ] && [[ "$out" == *"/exec is denied by the execmcp socket proxy"* ]] &&
  pass "a refused backend call fails the command (exit 125) with the proxy's message" ||
  fail "a refused backend call: exit $code, output: $out"

finish
