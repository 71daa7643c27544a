# shellcheck shell=bash
# Shared by the deployment tests (sourced): checks, the engine gate, and a proxy or compose stack
# that is always torn down. Each test sets `repo` before sourcing this file.

# Every container, network and volume a test makes carries this tag, so runs never collide.
run_tag="deploytest$$"
fail_count=0
cleanups=()

say() { echo "$(basename "$0"): $*" >&2; }
fail() {
  say "FAIL: $*"
  fail_count=$((fail_count + 1))
}
pass() { say "ok: $*"; }
die() {
  say "FAIL: $*"
  exit 1
}
on_exit() {
  local i
  for ((i = ${#cleanups[@]} - 1; i >= 0; i--)); do eval "${cleanups[$i]}" >/dev/null 2>&1 || true; done
}
trap on_exit EXIT

# ctest shows exit 77 as skipped (SKIP_RETURN_CODE).
skip() {
  say "SKIPPED: $*"
  exit 77
}

# Skip when asked to, fail loudly when the engine is not there (as the C++ Docker tests do).
require_engine() {
  [ "${EXECMCP_DOCKER_TESTS:-1}" != 0 ] || skip "EXECMCP_DOCKER_TESTS=0"
  docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
    die "the Docker engine is not reachable; start it with scripts/docker-engine.sh start (or set EXECMCP_DOCKER_TESTS=0 to skip)"
  command -v curl >/dev/null 2>&1 || die "curl is needed (scripts/install-deps.sh --deploy)"
}

# Builds an image with docker/build.sh under a test tag; output only when it fails.
build_image() {
  local log
  log="$(mktemp)"
  if ! "$repo/docker/build.sh" "$@" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    rm -f "$log"
    die "docker/build.sh $* failed"
  fi
  grep '^build.sh: ' "$log" >&2 || true
  rm -f "$log"
}

# Checks one HTTP exchange: expect_http NAME STATUS BODY_SUBSTRING CURL_ARGS...
# (an empty BODY_SUBSTRING checks the status only).
expect_http() {
  local name="$1" want_status="$2" want_body="$3" out status body
  shift 3
  out="$(curl -sS --max-time 30 -w '\n%{http_code}' "$@" 2>&1)" || true
  status="${out##*$'\n'}"
  body="${out%$'\n'*}"
  if [ "$status" != "$want_status" ]; then
    fail "$name: HTTP $status, expected $want_status; body: ${body:0:300}"
  elif [ -n "$want_body" ] && [[ "$body" != *"$want_body"* ]]; then
    fail "$name: body lacks '$want_body': ${body:0:300}"
  else
    pass "$name: HTTP $status"
  fi
}

# The proxy's 403 body names the proxy, so whoever sees it knows where the refusal came from.
readonly denied_text="is denied by the execmcp socket proxy"

# Runs the socket proxy image as container NAME with the engine's socket, published on loopback
# only, removed at exit; waits until it answers and stores its URL in the variable URL_VAR.
#   start_proxy URL_VAR NAME IMAGE [HAPROXY_CFG]   (a config file replaces the image's own)
start_proxy() {
  local url_var="$1" name="$2" image="$3" cfg="${4:-}" port
  local mount=()
  [ -z "$cfg" ] || mount=(-v "$cfg:/etc/haproxy/execmcp-proxy.cfg:ro")
  docker run -d --name "$name" -v /var/run/docker.sock:/var/run/docker.sock:ro "${mount[@]}" \
    -p 127.0.0.1::2375 "$image" >/dev/null
  cleanups+=("docker rm -f $name")
  port="$(docker port "$name" 2375/tcp | head -n 1 | sed 's/.*://')"
  for _ in $(seq 50); do curl -fsS --max-time 2 "http://127.0.0.1:$port/_ping" >/dev/null 2>&1 && break; sleep 0.2; done
  printf -v "$url_var" 'http://127.0.0.1:%s' "$port"
}

# The compose command: Debian 12's docker-compose (1.29), else the `docker compose` plugin.
compose_cmd() {
  if command -v docker-compose >/dev/null 2>&1; then
    echo docker-compose
  elif docker compose version >/dev/null 2>&1; then
    echo "docker compose"
  fi
}

finish() {
  if [ "$fail_count" -gt 0 ]; then
    say "$fail_count check(s) failed"
    exit 1
  fi
  say "all checks passed"
}
