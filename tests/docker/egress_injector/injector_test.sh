#!/usr/bin/env bash
# execmcp-egress-injector in the egress proxy on the real engine, offline: an HTTPS upstream (a
# test CA made here) under the names api.test (named by a secret) and pass.test (allowed, not
# named), the egress image with the injector copied into an anonymous volume and started as the
# backend will start it (--serve -- the image's entrypoint), a squid.conf rendered by the backend's
# code with the secret lines, and a client on an internal network behind the proxy. Checks that
# the bundle arrives through `docker exec -i -u proxy ... --receive`, that a placeholder becomes
# the value at the upstream and an echo of it comes back as the placeholder (plain, gzip, plain
# HTTP), that pass.test is a plain tunnel, and that the value is in neither `docker inspect` nor
# `docker logs` of the proxy. Prints the latency of intercepted and passed-through requests, with
# and without the upstream pool.
#   injector_test.sh REPO INJECTOR RENDER_INJECTOR_CONF
set -euo pipefail
repo="$1"
injector="$2"
render="$3"
source "$repo/tests/docker/deploy/deploy_test_support.sh"
require_engine
egress="${EXECMCP_TEST_EGRESS_IMAGE:-execmcp/egress:latest}"
runtime="${EXECMCP_TEST_RUNTIME_IMAGE:-execmcp/runtime:latest}"
for image in "$egress" "$runtime"; do
  docker image inspect "$image" >/dev/null 2>&1 ||
    skip "image $image is missing: build it with docker/build.sh --egress --runtime"
done
command -v openssl >/dev/null || die "openssl is needed"

p="execmcp-injtest-$$"
work="$(mktemp -d)"
cleanups+=("rm -rf $work")

# --- certificates: the upstream's own CA and certificate; the agent's name-constrained CA and its
# leaf for api.test (what the backend mints per agent start) ---
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
ca() { # NAME CN [EXTRA -addext...]
  local name="$1" cn="$2"
  shift 2
  openssl req -x509 "${ec[@]}" -keyout "$work/$name.key" -out "$work/$name.pem" -days 2 -subj "/CN=$cn" \
    -addext basicConstraints=critical,CA:TRUE,pathlen:0 -addext keyUsage=critical,keyCertSign "$@" 2>/dev/null
}
leaf() { # NAME CA SANS
  openssl req "${ec[@]}" -keyout "$work/$1.key" -out "$work/$1.csr" -subj "/CN=$1" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n' "$3" >"$work/$1.ext"
  openssl x509 -req -in "$work/$1.csr" -CA "$work/$2.pem" -CAkey "$work/$2.key" -CAcreateserial \
    -out "$work/$1.pem" -days 2 -extfile "$work/$1.ext" 2>/dev/null
}
ca upca "injector test upstream CA"
leaf upstream upca "DNS:api.test,DNS:pass.test"
ca agentca "execmcp egress CA injector test" -addext "nameConstraints=critical,permitted;DNS:api.test"
leaf api.test agentca "DNS:api.test"
cat "$work/agentca.pem" "$work/upca.pem" >"$work/client-trust.pem"

# --- the secret: a value the sandbox never sees, and its placeholder (same length) ---
value="sk-injtest-$(openssl rand -hex 20)"
placeholder="sk-injtest-$(openssl rand -hex 20)"
b64() { base64 -w0; }
{
  echo "execmcp-secrets 1"
  echo "label $(printf injtest | b64)"
  echo "ca $(b64 <"$work/agentca.pem")"
  echo "leaf api.test $(b64 <"$work/api.test.pem") $(b64 <"$work/api.test.key")"
  echo "secret API_TOKEN $(printf %s "$value" | b64) $(printf %s "$placeholder" | b64) api.test - - - 1"
  echo "upstream-ca $(b64 <"$work/upca.pem")"
  echo "end"
} >"$work/bundle"

# --- networks, both without a way out of this machine ---
docker network create --internal --label "$p" "$p-up" >/dev/null
cleanups+=("docker network rm $p-up")
docker network create --internal --label "$p" "$p-int" >/dev/null
cleanups+=("docker network rm $p-int")
cleanups+=("docker ps -aq --filter label=$p | xargs -r docker rm -f -v")
int_subnet="$(docker network inspect -f '{{range .IPAM.Config}}{{.Subnet}}{{end}}' "$p-int")"

# --- the upstream ---
docker create --name "$p-up" --label "$p" --network "$p-up" --network-alias api.test \
  --network-alias pass.test "$runtime" python3 /srv/upstream.py /srv/upstream.pem /srv/upstream.key >/dev/null
chmod 0644 "$work/upstream.key" # a test key, read by the image's unprivileged user
for f in upstream.pem upstream.key; do docker cp -q "$work/$f" "$p-up:/srv/$f"; done
docker cp -q "$repo/tests/docker/egress_injector/upstream.py" "$p-up:/srv/upstream.py"
docker start "$p-up" >/dev/null

# --- the proxy, as the backend starts it when the agent has secrets ---
"$render" '{"allow": ["api.test", "pass.test"], "ports": [80, 443]}' injtest "$work/squid.conf" \
  "$work/page" api.test "$int_subnet" || die "rendering the squid.conf failed"
start_proxy() { # EXTRA_INJECTOR_ARGS...
  docker create --name "$p-proxy" --label "$p" --network "$p-int" --network-alias proxy --init \
    --read-only --tmpfs /tmp:rw,nosuid,nodev,noexec,mode=1777,size=8m --memory 128m --pids-limit 64 \
    --cap-drop ALL -v /.execmcp-egress -e "EXECMCP_EGRESS_CONF=$(cat "$work/squid.conf")" \
    -e "EXECMCP_EGRESS_ERROR_PAGE=$(cat "$work/page")" \
    --entrypoint /.execmcp-egress/execmcp-egress-injector "$egress" "$@" --serve -- \
    /usr/local/bin/execmcp-egress >/dev/null
  docker cp -q "$injector" "$p-proxy:/.execmcp-egress/execmcp-egress-injector"
  docker network connect "$p-up" "$p-proxy"
  docker start "$p-proxy" >/dev/null
}
stop_proxy() { docker rm -f -v "$p-proxy" >/dev/null; }
deliver() {
  docker exec -i -u proxy "$p-proxy" /.execmcp-egress/execmcp-egress-injector --receive <"$work/bundle"
}

# --- the client: curl with the agent's CA and the upstream's (pass.test is not intercepted) ---
docker run -d --name "$p-client" --label "$p" --network "$p-int" -e HTTPS_PROXY=http://proxy:3128 \
  -e HTTP_PROXY=http://proxy:3128 -e http_proxy=http://proxy:3128 -e "TRUST=$(cat "$work/client-trust.pem")" "$runtime" \
  sh -c 'printf "%s\n" "$TRUST" >/tmp/trust.pem; exec sleep infinity' >/dev/null
client_curl() { docker exec "$p-client" curl -sS --max-time 20 --cacert /tmp/trust.pem "$@"; }
wait_for_proxy() {
  for _ in $(seq 100); do
    docker exec "$p-client" curl -s -o /dev/null --max-time 2 http://proxy:3128/ && return 0
    sleep 0.1
  done
  die "the proxy does not answer on 3128: $(docker logs "$p-proxy" 2>&1 | tail -5)"
}
recorded() { docker exec "$p-up" cat /tmp/record/requests; }

start_proxy
wait_for_proxy

# Before the bundle: the intercepted host is refused, the other one works.
if out="$(client_curl https://api.test/echo 2>&1)"; then
  fail "api.test answered before the bundle arrived: $out"
else
  pass "api.test is refused until the bundle arrives ($out)"
fi
client_curl -o /dev/null https://pass.test/1k && pass "pass.test works before the bundle" ||
  fail "pass.test failed before the bundle"

out="$(deliver 2>&1)" && [ "$out" = "ok 1 secrets" ] && pass "bundle delivered: $out" ||
  fail "delivery: $out"
out="$(printf 'execmcp-secrets 1\nlabel -\n' | docker exec -i -u proxy "$p-proxy" \
  /.execmcp-egress/execmcp-egress-injector --receive 2>&1)" && fail "a broken bundle was taken: $out" ||
  pass "a broken bundle is refused, naming the field: $out"

# The placeholder becomes the value at the upstream; the echo comes back with the placeholder.
out="$(client_curl -i -H "Authorization: Bearer $placeholder" https://api.test/echo 2>&1)" || true
[[ "$out" == *"Bearer $placeholder"* && "$out" != *"$value"* ]] &&
  pass "api.test echo comes back with the placeholder (header and body)" ||
  fail "api.test echo: ${out:0:600}"
grep -qF "https api.test /echo Bearer $value" <<<"$(recorded)" &&
  pass "api.test received the value" || fail "api.test did not receive the value: $(recorded | tail -3)"
out="$(client_curl -H "Authorization: Bearer $placeholder" "https://api.test/echo?gzip=1" 2>&1)" || true
[[ "$out" == *"Bearer $placeholder"* && "$out" != *"$value"* ]] &&
  pass "a gzip echo is inflated and scrubbed" || fail "gzip echo: ${out:0:600}"
out="$(client_curl -H "Authorization: Bearer $placeholder" http://api.test/echo 2>&1)" || true
[[ "$out" == *"Bearer $placeholder"* && "$out" != *"$value"* ]] &&
  grep -qF "http api.test /echo Bearer $value" <<<"$(recorded)" &&
  pass "plain HTTP to api.test: injected and scrubbed" || fail "plain HTTP: ${out:0:600} / $(recorded | tail -2)"

# A request body (2 MiB, Expect: 100-continue) arrives whole; HEAD has no body; two requests on
# one client connection (keep-alive) both work.
docker exec "$p-client" sh -c 'head -c 2097152 /dev/urandom >/tmp/body'
want="$(docker exec "$p-client" sha256sum /tmp/body | cut -d" " -f1)"
out="$(client_curl -H "Authorization: Bearer $placeholder" -H "Expect: 100-continue" \
  --data-binary @/tmp/body https://api.test/upload 2>&1)" || true
[[ "$out" == *"\"length\": 2097152"* && "$out" == *"$want"* && "$out" == *"$placeholder"* ]] &&
  pass "a 2 MiB request body with Expect: 100-continue arrives whole" || fail "upload: ${out:0:300}"
out="$(client_curl -sS -I -H "Authorization: Bearer $placeholder" https://api.test/1k 2>&1)" || true
[[ "$out" == *"200"* && "$out" == *"Content-Length: 1024"* && "$out" == *"$placeholder"* ]] &&
  pass "HEAD: the header only, scrubbed" || fail "HEAD: ${out:0:300}"
out="$(client_curl -H "Authorization: Bearer $placeholder" -w '%{num_connects}\n' -o /dev/null \
  https://api.test/1k -o /dev/null https://api.test/1k 2>&1)" || true
[ "$out" = $'1\n0' ] && pass "keep-alive: two requests on one client connection" ||
  fail "keep-alive: connects per request: $out"

# A body that inflates 1000-fold streams through the proxy's 128 MiB.
out="$(client_curl -o /dev/null -w '%{size_download} %{http_code}' https://api.test/bomb 2>&1)" || true
[ "$out" = "67108864 200" ] && pass "64 MiB inflated from a 64 KiB gzip body stream through" ||
  fail "gzip bomb: $out ($(docker inspect -f '{{.State.Status}} OOMKilled={{.State.OOMKilled}}' "$p-proxy"))"

# A kept connection that the upstream closes without answering: the request is sent once more on
# a new connection (here the upstream drops that one too: a 502 naming the host).
client_curl -o /dev/null https://api.test/1k || true
out="$(client_curl https://api.test/drop 2>&1)" || true
drops="$(recorded | grep -c ' /drop ' || true)"
[[ "$out" == *"api.test:443 gave no answer"* && "$drops" = 2 ]] &&
  pass "a request on a closed kept connection is sent again once: $out" ||
  fail "drop: $drops attempts: ${out:0:300}"

# What cannot be scrubbed is refused with a sentence: another content-coding, a 206.
out="$(client_curl -H "Authorization: Bearer $placeholder" https://api.test/brotli 2>&1)" || true
[[ "$out" == *"api.test answered with Content-Encoding br"* ]] && pass "a br body is refused: $out" ||
  fail "br: ${out:0:300}"
out="$(client_curl -H "Authorization: Bearer $placeholder" https://api.test/partial 2>&1)" || true
[[ "$out" == *"206 Partial Content"* ]] && pass "a 206 is refused: $out" || fail "206: ${out:0:300}"
# A request that could be read two ways is refused before it leaves.
out="$(client_curl -H "Authorization: Bearer $placeholder" -H "Upgrade: websocket" \
  -H "Connection: Upgrade" https://api.test/echo -w ' %{http_code}' 2>&1)" || true
[[ "$out" == *" 400" ]] && pass "an Upgrade is refused: $out" || fail "Upgrade: ${out:0:300}"

# The TLS name must be the CONNECT host: CONNECT api.test:443 with SNI evil.test gets no certificate.
out="$(client_curl --connect-to evil.test:443:api.test:443 https://evil.test/echo 2>&1)" &&
  fail "SNI evil.test inside CONNECT api.test was served: ${out:0:200}" ||
  pass "an SNI other than the CONNECT host is refused ($out)"

# pass.test: a tunnel the injector never sees: the placeholder arrives as it was sent.
out="$(client_curl -H "Authorization: Bearer $placeholder" https://pass.test/echo 2>&1)" || true
[[ "$out" == *"Bearer $placeholder"* ]] && grep -qF "https pass.test /echo Bearer $placeholder" <<<"$(recorded)" &&
  pass "pass.test is passed through untouched" || fail "pass.test: ${out:0:400}"
issuer="$(docker exec "$p-client" sh -c 'curl -sS -v --cacert /tmp/trust.pem -o /dev/null https://pass.test/1k 2>&1 | grep -i "issuer:"' || true)"
[[ "$issuer" == *"injector test upstream CA"* ]] && pass "pass.test shows the upstream's own certificate" ||
  fail "pass.test certificate: $issuer"

# The value is in neither the proxy's inspect nor its log; the events are there.
docker inspect "$p-proxy" | grep -qF "$value" && fail "the value is in docker inspect" ||
  pass "the value is not in docker inspect of the proxy"
logs="$(docker logs "$p-proxy" 2>&1)"
grep -qF "$value" <<<"$logs" && fail "the value is in docker logs" || pass "the value is not in docker logs of the proxy"
grep -q "^execmcp-secret injtest injected API_TOKEN GET api.test /echo" <<<"$logs" &&
  pass "the log holds the injected events" || fail "no injected event in: $(grep execmcp-secret <<<"$logs" | head -3)"
grep -q "^execmcp-secret injtest scrubbed API_TOKEN" <<<"$logs" && pass "the log holds scrubbed events" ||
  fail "no scrubbed event"
# The injector's own leg (port 3129, from 127.0.0.1) is not in the access log.
if grep -E '^execmcp-egress ' <<<"$logs" | grep -q ' 127\.0\.0\.1 '; then
  fail "the injector's leg is in the access log: $(grep -E '^execmcp-egress ' <<<"$logs" | grep ' 127\.0\.0\.1 ' | head -2)"
else
  pass "the access log holds the agent's requests only"
fi

rss="$(docker exec "$p-proxy" sh -c 'grep VmRSS /proc/$(cut -d" " -f1 /proc/1/task/1/children)/status')"
say "injector memory after the checks: $rss"
# Not dumpable: another process of its user (Squid's) cannot read it (/proc/PID/environ needs
# the same access as /proc/PID/mem), while Squid's own can be read.
injector_pid='$(cut -d" " -f1 /proc/1/task/1/children)'
docker exec "$p-proxy" sh -c "cat /proc/$injector_pid/environ" >/dev/null 2>&1 &&
  fail "the proxy's user can read the injector's process" ||
  pass "the proxy's user cannot read the injector's process"
docker exec "$p-proxy" sh -c "cat /proc/\$(cat /proc/$injector_pid/task/*/children | cut -d' ' -f1)/environ" \
  >/dev/null 2>&1 && pass "(while it can read Squid's)" || fail "Squid's process cannot be read either"

# Latency, new client connection (curl) each time: intercepted against passed through.
measure() { # URL N -> p50 of time_total in ms
  docker exec "$p-client" sh -c "for i in \$(seq $2); do curl -s -o /dev/null --cacert /tmp/trust.pem \
    -H 'Authorization: Bearer $placeholder' -w '%{time_total}\n' $1; done" |
    sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]*1000}'
}
n="${EXECMCP_INJECTOR_SAMPLES:-30}"
pooled="$(measure https://api.test/1k "$n")"
passed="$(measure https://pass.test/1k "$n")"
say "p50 of $n requests: intercepted ${pooled} ms (upstream pool on), passed through ${passed} ms"
# docker stop: the stop signal reaches the injector, which passes it to Squid and exits with it.
started=$(date +%s%N)
docker stop -t 20 "$p-proxy" >/dev/null
took=$((($(date +%s%N) - started) / 1000000))
status="$(docker inspect -f '{{.State.ExitCode}}' "$p-proxy")"
[ "$took" -lt 10000 ] && pass "docker stop ends the proxy in ${took} ms (exit $status)" ||
  fail "docker stop took ${took} ms (exit $status)"
stop_proxy
start_proxy --pool 0
wait_for_proxy
deliver >/dev/null
unpooled="$(measure https://api.test/1k "$n")"
passed2="$(measure https://pass.test/1k "$n")"
say "p50 of $n requests: intercepted ${unpooled} ms (upstream pool off), passed through ${passed2} ms"
# After a restart the re-delivered bundle is served again.
out="$(client_curl -H "Authorization: Bearer $placeholder" https://api.test/echo 2>&1)" || true
[[ "$out" == *"Bearer $placeholder"* ]] && pass "after a restart and a re-delivery api.test works" ||
  fail "after restart: ${out:0:300}"

# Fail closed: the injector killed from outside takes Squid with it.
docker exec "$p-proxy" sh -c 'kill -9 $(cat /proc/1/task/1/children | cut -d" " -f1)' 2>/dev/null || true
sleep 2
state="$(docker inspect -f '{{.State.Running}}' "$p-proxy")"
[ "$state" = false ] && pass "the proxy stops when its injector dies" || fail "the proxy still runs without its injector"

[ "$fail_count" -eq 0 ] || die "$fail_count check(s) failed"
say "all checks passed"
