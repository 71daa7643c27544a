#!/usr/bin/env bash
# Runs docker/compose.yaml on the real engine (server image from this build tree, the socket
# proxy, the runtime image for agents) and checks that the server reaches Docker only through
# the proxy.
#   compose_stack_test.sh REPO BUILD_DIR exec   a command of a docker-api agent, run by the server
#                                               container's `execmcp exec`, through the proxy
#   compose_stack_test.sh REPO BUILD_DIR http   `up` with `serve --http`: the HEALTHCHECK turns
#                                               healthy, /health, /ready and /metrics answer,
#                                               tokens are checked, tool calls of both protocol
#                                               eras run through the proxy, the audit trail lands
#                                               in the state volume, `stop`/`down` leaves no
#                                               agent container
set -euo pipefail
repo="$1"
build_dir="$2"
mode="$3"
source "$(dirname "${BASH_SOURCE[0]}")/deploy_test_support.sh"
require_engine
compose="$(compose_cmd)"
[ -n "$compose" ] || skip "neither docker-compose nor 'docker compose' is installed (scripts/install-deps.sh --deploy)"

server_image="execmcp/server:test"
proxy_image="execmcp/proxy:test"
build_image --server --from-build "$build_dir" -t "$server_image"
build_image --proxy -t "$proxy_image"
build_image --runtime

# Workspaces at the same path on the host and in the server, owned by the server's uid (1000), so
# the backend runs each agent's container as that owner.
work="$(mktemp -d)"
cleanups+=("rm -rf $work")
chmod 755 "$work"
agent="stack_$run_tag"
mkdir -p "$work/ws/$agent"
chown -R 1000:1000 "$work/ws"
# Two tokens: one kept only as its hash (as docker/server/config.example.yaml), one read from the
# environment at start.
token="token-$run_tag-$RANDOM$RANDOM"
token_hash="$(printf %s "$token" | sha256sum | cut -d' ' -f1)"
env_token="env-token-$run_tag-$RANDOM$RANDOM"
{
  echo "execmcp: 1"
  echo "log_dir: /var/lib/execmcp/logs"
  echo "audit_file: /var/lib/execmcp/audit.jsonl"
  if [ "$mode" = http ]; then
    echo "server:"
    echo "  tokens:"
    echo "    - {name: deploy-test, sha256: $token_hash, agents: [$agent]}"
    echo "    - {name: deploy-env, env: EXECMCP_TOKEN_TEST, agents: [$agent]}"
  fi
  echo "agents:"
  echo "  - id: $agent"
  echo "    cwd: $work/ws/$agent"
  echo "    backend: {plugin: docker-api}"
} >"$work/config.yaml"
chmod 644 "$work/config.yaml"
# The test's additions: the environment token, and a health check every 2 s instead of 30 s.
cat >"$work/override.yaml" <<YAML
services:
  execmcp:
    environment:
      EXECMCP_TOKEN_TEST: "$env_token"
    healthcheck:
      interval: 2s
      start_period: 60s
YAML

export EXECMCP_CONFIG="$work/config.yaml" EXECMCP_WORKSPACES="$work/ws" EXECMCP_PORT="127.0.0.1:" \
  EXECMCP_SERVER_IMAGE="$server_image" EXECMCP_PROXY_IMAGE="$proxy_image" \
  EXECMCP_PROXY_CONTAINER="execmcp_proxy_$run_tag" EXECMCP_SERVER_CONTAINER="execmcp_server_$run_tag"
stack=($compose -p "$run_tag" -f "$repo/docker/compose.yaml" -f "$work/override.yaml")
cleanups+=("${stack[*]} down -v --timeout 30")
cleanups+=("docker ps -aq --filter label=execmcp.agent=$agent | xargs -r docker rm -f")

if [ "$mode" = exec ]; then
  # The server container has no socket; DOCKER_HOST points at the proxy.
  got="$("${stack[@]}" run --rm -T execmcp sh -c \
    'test -e /var/run/docker.sock && echo has-socket; echo "$DOCKER_HOST"' 2>"$work/run.log")" || true
  [ "$got" = tcp://proxy:2375 ] && pass "no socket in the server; DOCKER_HOST=$got" ||
    fail "server container: '$got'; $(tail -n 5 "$work/run.log")"

  out="$("${stack[@]}" run --rm -T execmcp execmcp exec --config /etc/execmcp/config.yaml \
    --agent "$agent" -- 'echo through-the-stack > note; cat note; id -u' 2>"$work/run.log")" || true
  if [[ "$out" == *through-the-stack* ]] && [ "$(cat "$work/ws/$agent/note" 2>/dev/null)" = through-the-stack ]; then
    pass "a docker-api command ran from the server container through the proxy"
  else
    fail "a command through the stack: output '$out'; $(tail -n 10 "$work/run.log")"
  fi
  owner="$(stat -c %u "$work/ws/$agent/note" 2>/dev/null || true)"
  [ "$owner" = 1000 ] && pass "the agent's file belongs to the workspace owner" ||
    fail "the agent's file belongs to uid '$owner'"

  # From inside the server, an endpoint the proxy denies fails with its message.
  got="$("${stack[@]}" run --rm -T execmcp curl -sS --max-time 10 -X POST \
    http://proxy:2375/v1.41/containers/create?name=other 2>&1)" || true
  [[ "$got" == *"$denied_text"* ]] && pass "the server cannot create a container not named execmcp-" ||
    fail "create through the proxy from the server: $got"
  left="$(docker ps -aq --filter "label=execmcp.agent=$agent")"
  [ -z "$left" ] && pass "no agent container left" || fail "agent containers left: $left"
  finish
  exit 0
fi

# --- http ---
"${stack[@]}" up -d >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; die "compose up failed"; }
server="$EXECMCP_SERVER_CONTAINER"
health=""
for _ in $(seq 90); do
  health="$(docker inspect -f '{{.State.Health.Status}}' "$server" 2>/dev/null || true)"
  [ "$health" = healthy ] && break
  [ "$(docker inspect -f '{{.State.Running}}' "$server" 2>/dev/null)" = true ] || break
  sleep 1
done
[ "$health" = healthy ] && pass "the server's HEALTHCHECK is healthy" ||
  die "the server is '$health', not healthy; logs: $(docker logs --tail 30 "$server" 2>&1)"
# The log line follows the listen, and docker collects logs asynchronously: give it a moment.
listening=""
for _ in $(seq 20); do
  docker logs "$server" 2>&1 | grep -q 'execmcp: listening on http://0.0.0.0:8000' && listening=1 && break
  sleep 0.5
done
[ -n "$listening" ] && pass "the server says where it listens" ||
  fail "no 'listening on' line: $(docker logs --tail 10 "$server" 2>&1)"
port="$(docker port "$server" 8000/tcp | head -n 1 | sed 's/.*://')"
base="http://127.0.0.1:$port"

expect_http "GET /health without credentials" 200 '"ok"' "$base/health"
# /ready starts nothing; without credentials it says only how many agents are in each state.
expect_http "GET /ready without credentials (counts only, nothing started)" 200 '"not_started":1' \
  "$base/ready"

init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"compose-stack-test","version":"1"}}}'
mcp=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
expect_http "POST /mcp/$agent without a token" 401 "" "${mcp[@]}" -d "$init" "$base/mcp/$agent"
expect_http "POST /mcp/$agent with a wrong token" 401 "" "${mcp[@]}" \
  -H "Authorization: Bearer not-$token" -d "$init" "$base/mcp/$agent"
expect_http "POST /mcp/other_agent with a token for $agent only" 403 insufficient_scope "${mcp[@]}" \
  -H "Authorization: Bearer $token" -d "$init" "$base/mcp/other_agent"

# A 2025-06-18 client: initialize, a session id, then a tool call in that session.
auth=(-H "Authorization: Bearer $token")
headers="$work/headers"
curl -sS --max-time 30 -D "$headers" -o "$work/init.out" "${mcp[@]}" "${auth[@]}" -d "$init" \
  "$base/mcp/$agent" || true
session="$(sed -n 's/^[Mm][Cc][Pp]-[Ss]ession-[Ii][Dd]: *//p' "$headers" | tr -d '\r')"
grep -q '"protocolVersion":"2025-06-18"' "$work/init.out" && [ -n "$session" ] &&
  pass "initialize over HTTP gives a session" ||
  fail "initialize: session '$session', body $(cat "$work/init.out")"
session_h=(-H "Mcp-Session-Id: $session")
curl -sS --max-time 10 -o /dev/null "${mcp[@]}" "${auth[@]}" "${session_h[@]}" \
  -H 'MCP-Protocol-Version: 2025-06-18' -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  "$base/mcp/$agent" || true
call='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_command","arguments":{"command":"echo through-http-and-proxy > note; cat note"}}}'
expect_http "tools/call execute_command over HTTP (2025-06-18 session), through the proxy" 200 \
  through-http-and-proxy "${mcp[@]}" "${auth[@]}" "${session_h[@]}" \
  -H 'MCP-Protocol-Version: 2025-06-18' -d "$call" "$base/mcp/$agent"
[ "$(cat "$work/ws/$agent/note" 2>/dev/null)" = through-http-and-proxy ] &&
  pass "the agent wrote its workspace on the host" || fail "no note in the workspace"
owner="$(stat -c %u "$work/ws/$agent/note" 2>/dev/null || true)"
[ "$owner" = 1000 ] && pass "the agent's file belongs to the workspace owner" ||
  fail "the agent's file belongs to uid '$owner'"
# The first call started the agent: version, image check, the labelled list, create, start and the
# container's probe exec all went through the proxy. /ready and /metrics name it to its token.
expect_http "GET /ready with the token" 200 "\"$agent\":\"started\"" "${auth[@]}" "$base/ready"
expect_http "GET /metrics with the token" 200 "execmcp_agent_started{agent=\"$agent\"} 1" \
  "${auth[@]}" "$base/metrics"

# A 2026-07-28 client: no handshake, the revision in _meta and the headers.
meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
call26='{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_command","arguments":{"command":"cat note; id -u"},'"$meta"'}}'
expect_http "tools/call over HTTP (2026-07-28, stateless; the token from the environment)" 200 \
  through-http-and-proxy "${mcp[@]}" -H "Authorization: Bearer $env_token" -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' \
  -H 'Mcp-Name: execute_command' -d "$call26" "$base/mcp/$agent"

h26=(-H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: execute_command')
meta_progress='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p1"}'

# Output streams while the command runs: the exec stream through HAProxy's tunnel, then SSE
# through the published port.
stream='{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"execute_command","arguments":{"command":"echo first-line; sleep 3; echo last-line"},'"$meta_progress"'}}'
curl -sS -N --max-time 30 -D "$work/stream.headers" -o "$work/stream.out" "${mcp[@]}" "${auth[@]}" \
  "${h26[@]}" -d "$stream" "$base/mcp/$agent" || true
if grep -qi '^content-type: text/event-stream' "$work/stream.headers" &&
  grep -q 'notifications/progress' "$work/stream.out" && grep -q first-line "$work/stream.out" &&
  grep -q '"id":4' "$work/stream.out" && grep -q last-line "$work/stream.out"; then
  pass "a call with a progressToken streams progress over SSE, then its result"
else
  fail "streamed call: $(head -c 600 "$work/stream.out"); headers: $(tr -d '\r' <"$work/stream.headers" | head -n 5)"
fi

# 2026-07-28: a client that goes away mid-call gets its command killed in the agent's container.
gone='{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"execute_command","arguments":{"command":"sleep 47; echo too-late > late"},'"$meta_progress"'}}'
curl -sS -N --max-time 3 -o /dev/null "${mcp[@]}" "${auth[@]}" "${h26[@]}" -d "$gone" \
  "$base/mcp/$agent" >/dev/null 2>&1 || true
agent_container="$(docker ps -q --filter "label=execmcp.agent=$agent" | head -n 1)"
still=""
for _ in $(seq 20); do
  still="$(docker exec "$agent_container" sh -c 'ps -eo args | grep -c "^sleep 47" || true' 2>&1)"
  [ "$still" = 0 ] && break
  sleep 0.5
done
[ "$still" = 0 ] && [ ! -e "$work/ws/$agent/late" ] &&
  pass "a client that disconnected mid-call got its command killed" ||
  fail "after the client left: 'sleep 47' processes: '$still'"

# An Engine call the proxy denies, made from inside the server, fails with the proxy's message.
got="$(docker exec "$server" curl -sS --max-time 10 -X POST \
  http://proxy:2375/v1.41/containers/create?name=other 2>&1)" || true
[[ "$got" == *"$denied_text"* ]] && pass "the server cannot create a container not named execmcp-" ||
  fail "create through the proxy from the server: $got"
got="$(docker exec "$server" curl -sS --max-time 10 http://proxy:2375/v1.41/info 2>&1)" || true
[[ "$got" == *"$denied_text"* ]] && pass "the server cannot read the engine's system info" ||
  fail "GET /info through the proxy from the server: $got"

# Read-only root filesystem: the server writes only its state volume (audit trail) and /tmp.
docker exec "$server" sh -c 'touch /usr/local/x 2>/dev/null || touch /home/execmcp/x 2>/dev/null' &&
  fail "the server's root filesystem is writable" || pass "the server's root filesystem is read-only"
audit="$(docker exec "$server" cat /var/lib/execmcp/audit.jsonl 2>&1)" || true
[[ "$audit" == *through-http-and-proxy* && "$audit" == *deploy-test* ]] &&
  pass "the audit trail is in the state volume with the token's name" ||
  fail "audit trail: ${audit:0:400}"
[[ "$audit" == *deploy-env* ]] && pass "the audit trail names the environment token too" ||
  fail "audit trail lacks deploy-env: ${audit:0:400}"
[[ "$audit" != *"$token"* && "$audit" != *"$env_token"* ]] &&
  pass "no token is in the audit trail" || fail "a token is in the audit trail"
if docker logs "$server" 2>&1 | grep -qF -e "$token" -e "$env_token"; then
  fail "a token is in the server's log"
else
  pass "no token is in the server's log"
fi

"${stack[@]}" stop --timeout 30 >"$work/down.log" 2>&1 || { cat "$work/down.log" >&2; fail "compose stop failed"; }
code="$(docker inspect -f '{{.State.ExitCode}}' "$server" 2>/dev/null || true)"
[ "$code" = 0 ] && pass "SIGTERM: the server stopped with exit code 0" ||
  fail "the server stopped with '$code'; $(docker logs --tail 10 "$server" 2>&1)"
# The agent's container log was saved to log_dir, in the state volume, before it was removed.
docker cp "$server:/var/lib/execmcp/logs" "$work/logs" >/dev/null 2>&1 || true
ls "$work/logs/execmcp-$agent-"*.log >/dev/null 2>&1 &&
  pass "the agent container's log was saved in the state volume" ||
  fail "no saved container log: $(ls -la "$work/logs" 2>&1); $(docker logs --tail 5 "$server" 2>&1)"
"${stack[@]}" down --timeout 30 >>"$work/down.log" 2>&1 || { cat "$work/down.log" >&2; fail "compose down failed"; }
left="$(docker ps -aq --filter "label=execmcp.agent=$agent")"
[ -z "$left" ] && pass "compose stop/down (SIGTERM) left no agent container" ||
  fail "agent containers left: $left"
finish
