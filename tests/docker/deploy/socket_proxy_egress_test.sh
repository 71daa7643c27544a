#!/usr/bin/env bash
# The socket proxy's rules for `network: egress` and for following a log, on the real engine:
# each network call the docker-api backend makes gets through in the exact shape it sends, each
# near miss gets 403, a followed log streams, and an agent with `network: egress` runs a command
# through the proxy, reaching only allowed.test (an HTTP server on an upstream network of this
# test's own), leaving nothing behind.
#   socket_proxy_egress_test.sh REPO EXECMCP_BINARY
set -euo pipefail
repo="$1"
execmcp="$2"
source "$(dirname "${BASH_SOURCE[0]}")/deploy_test_support.sh"
require_engine

image="execmcp/proxy:test"
build_image --proxy -t "$image"
build_image --runtime
build_image --egress
runtime="execmcp/runtime:latest"

start_proxy p "execmcp_proxy_$run_tag" "$image"
proxy="execmcp_proxy_$run_tag"
api="$p/v1.41"
work="$(mktemp -d)"
cleanups+=("rm -rf $work")

# What this test makes on the engine carries the label $run_tag (the agent's things: its
# execmcp.agent label) and is removed at exit, containers before the networks they are on.
agent="egress_$run_tag"
remove_made() {
  local label
  for label in "$run_tag" "execmcp.agent=$agent"; do
    docker ps -aq --filter "label=$label" | xargs -r docker rm -f
  done
  for label in "$run_tag" "execmcp.agent=$agent"; do
    docker network ls -q --filter "label=$label" | xargs -r docker network rm
  done
}
cleanups+=(remove_made)
# The upstream network is not named execmcp-…: an operator's upstream_network may be any network.
upstream="${run_tag}-up"
docker network create --internal --label "$run_tag" "$upstream" >/dev/null
for host in allowed denied; do
  docker run -d --name "$run_tag-$host" --label "$run_tag" --network "$upstream" \
    --network-alias "$host.test" --read-only --cap-drop ALL --security-opt no-new-privileges \
    "$runtime" python3 -m http.server 80 --directory /etc >/dev/null
done

post_json() { # post_json NAME STATUS BODY_SUBSTRING URL JSON
  expect_http "$1" "$2" "$3" -X POST -H 'Content-Type: application/json' -d "$5" "$4"
}
net_exists() { docker network inspect "$1" >/dev/null 2>&1; }

# --- network create: only `Internal: true`, only execmcp-…, only the backend's exact body ---
net="execmcp-$run_tag-api-egress-net"
create_body() { # create_body NAME INTERNAL
  printf '{"Attachable":false,"CheckDuplicate":true,"Driver":"bridge","Internal":%s,"Labels":{"%s":"1","execmcp.managed":"true"},"Name":"%s","Options":{"com.docker.network.bridge.inhibit_ipv4":"true"}}' \
    "$2" "$run_tag" "$1"
}
good="$(create_body "$net" true)"
post_json "POST networks/create without Internal" 403 "$denied_text" "$api/networks/create" \
  "${good/\"Internal\":true,/}"
post_json "POST networks/create with Internal false" 403 "$denied_text" "$api/networks/create" \
  "$(create_body "$net" false)"
post_json "POST networks/create, Internal true then a lower-case internal false" 403 "$denied_text" \
  "$api/networks/create" "${good%\}},\"internal\":false}"
post_json "POST networks/create, a label value that closes Labels" 403 "$denied_text" \
  "$api/networks/create" "${good/\"1\"/\"1\"\},\"Internal\":false,\"x\":\{\"a\":\"b\"}"
post_json "POST networks/create, a second document after the body" 403 "$denied_text" \
  "$api/networks/create" "$good $(create_body "$net" false)"
post_json "POST networks/create with other driver Options" 403 "$denied_text" "$api/networks/create" \
  "${good/inhibit_ipv4\":\"true/name\":\"x}"
post_json "POST networks/create with inhibit_ipv4 false" 403 "$denied_text" "$api/networks/create" \
  "${good/inhibit_ipv4\":\"true/inhibit_ipv4\":\"false}"
post_json "POST networks/create without Options (the host would be on the network)" 403 \
  "$denied_text" "$api/networks/create" "${good%,\"Options\"*}}"
post_json "POST networks/create named other than execmcp-" 403 "$denied_text" \
  "$api/networks/create" "$(create_body "$run_tag-foreign" true)"
expect_http "POST networks/create chunked" 403 "$denied_text" -X POST \
  -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' -d "$good" "$api/networks/create"
left="$(docker network ls -q --filter "label=$run_tag" --filter "name=$run_tag-foreign")$(
  net_exists "$net" && echo "$net" || true)"
[ -z "$left" ] && pass "no refused create made a network" || fail "a refused create made: $left"
post_json "POST networks/create, the backend's body" 201 '"Id"' "$api/networks/create" "$good"
[ "$(docker network inspect -f '{{.Internal}}' "$net" 2>&1)" = true ] &&
  pass "the network made through the proxy is internal" || fail "$net is not an internal network"

# --- inspect: execmcp-… in full; any other network only as whether it exists ---
expect_http "GET networks/{execmcp-name}: the engine's whole answer" 200 '"Subnet"' "$api/networks/$net"
out="$(curl -sS --max-time 30 "$api/networks/bridge")"
[ "$out" = '{"Name":"bridge"}' ] && pass "GET networks/bridge says only that it exists" ||
  fail "GET networks/bridge through the proxy: $out"
expect_http "GET networks/{other name} that does not exist (404 from the engine)" 404 'not found' \
  "$api/networks/$run_tag-no-such"

# --- list: only execmcp's label filter ---
managed='%7B%22label%22%3A%5B%22execmcp.managed%3Dtrue%22%5D%7D'
expect_http "GET networks, execmcp label filter" 200 "\"$net\"" "$api/networks?filters=$managed"
expect_http "GET networks without a filter" 403 "$denied_text" "$api/networks"
expect_http "GET networks, another label" 403 "$denied_text" \
  "$api/networks?filters=%7B%22label%22%3A%5B%22x%22%5D%7D"
expect_http "GET networks, the filter twice" 403 "$denied_text" \
  "$api/networks?filters=$managed&filters=%7B%7D"

# --- connect: only an egress proxy, aliased by its name, to an upstream (never host/none/another
# agent's internal network); disconnect and prune never ---
egress="execmcp-$run_tag-api-egress"
docker create --name "$egress" --label "$run_tag" --network "$net" "$runtime" sleep 60 >/dev/null
connect_body() { printf '{"Container":"%s","EndpointConfig":{"Aliases":["%s"]}}' "$1" "${2:-$1}"; }
for target in host none "$net"; do
  post_json "POST networks/$target/connect" 403 "$denied_text" "$api/networks/$target/connect" \
    "$(connect_body "$egress")"
done
post_json "POST connect of a container not named execmcp-" 403 "$denied_text" \
  "$api/networks/$upstream/connect" "$(connect_body "$run_tag-allowed")"
post_json "POST connect of an agent's container (not …-egress)" 403 "$denied_text" \
  "$api/networks/$upstream/connect" "$(connect_body "execmcp-$run_tag-api")"
post_json "POST connect with another container's alias" 403 "$denied_text" \
  "$api/networks/$upstream/connect" "$(connect_body "$egress" allowed.test)"
post_json "POST connect with an IP address asked for" 403 "$denied_text" \
  "$api/networks/$upstream/connect" \
  "{\"Container\":\"$egress\",\"EndpointConfig\":{\"Aliases\":[\"$egress\"],\"IPAMConfig\":{\"IPv4Address\":\"10.0.0.9\"}}}"
post_json "POST connect, the backend's body" 200 '' "$api/networks/$upstream/connect" \
  "$(connect_body "$egress")"
aliases="$(docker inspect -f "{{json (index .NetworkSettings.Networks \"$upstream\").Aliases}}" "$egress" 2>&1)"
[[ "$aliases" == *"\"$egress\""* ]] && pass "the proxy container is on the upstream network as $egress" ||
  fail "the proxy container's aliases on $upstream: $aliases"
# The default bridge takes no alias, so there the backend sends none.
egress2="execmcp-$run_tag-cli-egress"
docker create --name "$egress2" --label "$run_tag" --network "$net" "$runtime" sleep 60 >/dev/null
post_json "POST connect without an alias (the default bridge's body)" 200 '' \
  "$api/networks/$upstream/connect" "{\"Container\":\"$egress2\"}"
docker rm -f "$egress2" >/dev/null
post_json "POST networks/{id}/disconnect" 403 "$denied_text" "$api/networks/$upstream/disconnect" \
  "{\"Container\":\"$egress\"}"
expect_http "POST networks/prune" 403 "$denied_text" -X POST "$api/networks/prune"

# --- remove: only execmcp-… ---
expect_http "DELETE a network not named execmcp-" 403 "$denied_text" -X DELETE "$api/networks/$upstream"
expect_http "DELETE networks/bridge" 403 "$denied_text" -X DELETE "$api/networks/bridge"
net_exists "$upstream" && pass "the refused removal left $upstream" || fail "$upstream was removed"
docker rm -f "$egress" >/dev/null
expect_http "DELETE networks/{execmcp-name}" 204 '' -X DELETE "$api/networks/$net"
net_exists "$net" && fail "$net is still there" || pass "$net was removed through the proxy"

# --- logs with follow: execmcp-… containers only, read-only options only ---
talker="execmcp-$run_tag-talker"
docker run -d --name "$talker" --label "$run_tag" "$runtime" \
  sh -c 'echo first; sleep 5; echo second; sleep 60' >/dev/null
expect_http "GET logs?follow=1 of a non-execmcp container" 403 "$denied_text" \
  "$api/containers/$run_tag-allowed/logs?follow=1&stdout=1&stderr=1"
expect_http "GET logs?follow=1 with an unknown parameter" 403 "$denied_text" \
  "$api/containers/$talker/logs?follow=1&stdout=1&details=1"
expect_http "GET logs?follow=1 with an escaped parameter" 403 "$denied_text" \
  "$api/containers/$talker/logs?follow=1&std%6Fut=1"
status="$(curl -sS --max-time 2 -o "$work/follow" -w '%{http_code}' \
  "$api/containers/$talker/logs?follow=1&stdout=1&stderr=1&tail=all" 2>/dev/null)" || true
[ "$status" = 200 ] && grep -q first "$work/follow" &&
  pass "GET logs?follow=1&stdout=1&stderr=1&tail=all of an execmcp- container streams its log" ||
  fail "GET logs?follow=1 of $talker: HTTP $status, $(tr -d '\000-\010' <"$work/follow")"
# A follow may stay quiet for long: through a proxy whose server timeout is 2 s, a stream quiet
# for 5 s still brings the second line (a follow's server timeout is raised to 24 h).
short="$(mktemp -d)"
cleanups+=("rm -rf $short")
chmod 755 "$short"
sed 's/^\( *timeout server\) 10m$/\1 2s/' "$repo/docker/proxy/haproxy.cfg" >"$short/haproxy.cfg"
chmod 644 "$short/haproxy.cfg"
grep -q 'timeout server 2s' "$short/haproxy.cfg" || fail "could not shorten the server timeout"
start_proxy short_p "${proxy}_short" "$image" "$short/haproxy.cfg"
docker rm -f "$talker" >/dev/null
docker run -d --name "$talker" --label "$run_tag" "$runtime" \
  sh -c 'echo first; sleep 5; echo second; sleep 60' >/dev/null
out="$(curl -sS --max-time 9 "$short_p/v1.41/containers/$talker/logs?follow=1&stdout=1" 2>&1 |
  tr -d '\000-\010')" || true
[[ "$out" == *first*second* ]] && pass "a followed log quiet for 5 s outlives a 2 s server timeout" ||
  fail "a followed log through a proxy with a 2 s server timeout: $out"
docker rm -f "$talker" >/dev/null

# --- an agent with network: egress through the proxy ---
log_before="$(docker logs "$proxy" 2>&1 | wc -l)"
mkdir -p "$work/ws"
cat >"$work/config.yaml" <<YAML
execmcp: 1
log_dir: $work/logs
agents:
  - id: $agent
    cwd: $work/ws
    backend:
      plugin: docker-api
      settings:
        docker_host: "tcp://${p#http://}"
        network: egress
        egress: {allow: [allowed.test], upstream_network: $upstream}
YAML
# A dead server's egress network on this host: the agent's start removes it through the proxy.
# Every execmcp on this host sweeps its dead servers' networks, and other suites run beside this
# one: the server runs under a host name of its own (a UTS namespace), which the orphan carries, so
# no other server removes it first.
orphan="execmcp-$run_tag-orphan-egress-net"
owner_host="$(uname -n)"
own_host=()
if unshare --uts true 2>/dev/null; then
  owner_host="t$run_tag"
  own_host=(unshare --uts sh -c 'hostname "$1" && shift && exec "$@"' sh "$owner_host")
fi
dead_pid="$(sh -c 'echo $$')"
docker network create --internal --label execmcp.managed=true --label "execmcp.owner.host=$owner_host" \
  --label "execmcp.owner.pid=$dead_pid" --label "$run_tag" "$orphan" >/dev/null
# Squid listens about half a second after its start: the first request may wait for it.
out="$("${own_host[@]}" "$execmcp" exec --config "$work/config.yaml" --agent "$agent" -- \
  'for i in $(seq 50); do curl -s http://allowed.test/hostname && break; sleep 0.2; done;
   curl -s -o /dev/null -w "denied.test:%{http_code}\n" http://denied.test/hostname' \
  2>"$work/exec.log")" || true
allowed_host="$(docker inspect -f '{{.Config.Hostname}}' "$run_tag-allowed")"
if [[ "$out" == *"$allowed_host"* ]]; then
  pass "an egress agent reached allowed.test through its proxy, started through the socket proxy"
else
  fail "an egress agent through the socket proxy: output '$out'; log: $(cat "$work/exec.log")"
fi
[[ "$out" == *"denied.test:403"* ]] && pass "the egress agent was refused denied.test (403)" ||
  fail "denied.test from the egress agent: '$out'"
calls="$(docker logs "$proxy" 2>&1 | tail -n +"$((log_before + 1))")"
for call in 'POST /v1.41/networks/create HTTP' "POST /v1.41/networks/$upstream/connect HTTP" \
  "GET /v1.41/networks/$upstream HTTP" "GET /v1.41/networks?filters=$managed HTTP" \
  "GET /v1.41/networks/execmcp-$agent-" "DELETE /v1.41/networks/$orphan HTTP" \
  "DELETE /v1.41/networks/execmcp-$agent-"; do
  grep -qF "$call" <<<"$calls" && pass "the backend called ${call% HTTP} through the proxy" ||
    fail "no '$call' in the proxy's log"
done
refused="$(grep -E ' -?[0-9]+/-?[0-9]+/-?[0-9]+/-?[0-9]+/-?[0-9]+ 403 ' <<<"$calls" || true)"
[ -z "$refused" ] && pass "no call of the egress agent was refused" ||
  fail "the proxy refused calls of the egress agent: $refused"
left="$(docker ps -aq --filter "label=execmcp.agent=$agent")$(
  docker network ls -q --filter "label=execmcp.agent=$agent")"
[ -z "$left" ] && pass "the agent's container, egress proxy and network were removed" ||
  fail "left behind by the egress agent: $left"
net_exists "$orphan" && fail "the orphan network $orphan is still there" ||
  pass "the dead server's egress network was removed through the proxy"

finish
