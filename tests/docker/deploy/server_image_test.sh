#!/usr/bin/env bash
# Builds the server image from this build tree (docker/build.sh --server --from-build) and checks
# what it promises: the same execmcp, its plugins, a non-root user that gets a mounted socket's
# group and no capabilities, port 8000 and a HEALTHCHECK on /health.
#   server_image_test.sh REPO BUILD_DIR
set -euo pipefail
repo="$1"
build_dir="$2"
source "$(dirname "${BASH_SOURCE[0]}")/deploy_test_support.sh"
require_engine

image="execmcp/server:test"
build_image --server --from-build "$build_dir" -t "$image"

want="$("$build_dir/bin/execmcp" --version)"
got="$(docker run --rm "$image" execmcp --version 2>&1)" || true
[ "$got" = "$want" ] && pass "docker run $image execmcp --version: $got" ||
  fail "execmcp --version in the image: '$got', the build tree's: '$want'"

plugins="$(docker run --rm "$image" execmcp plugins 2>&1)" || true
for name in docker-api local sanitize patterns; do
  grep -Eq "^$name .*/usr/local/lib/execmcp/plugins/" <<<"$plugins" &&
    pass "plugin $name installed" || fail "plugin $name not listed from the install: $plugins"
done

got="$(docker run --rm "$image" id -un 2>&1)" || true
[ "$got" = execmcp ] && pass "commands run as execmcp" || fail "commands run as '$got', not execmcp"

socket_gid="$(stat -c %g /var/run/docker.sock)"
status="$(docker run --rm -v /var/run/docker.sock:/var/run/docker.sock "$image" \
  sh -c 'id -u; id -G; cat /proc/self/status' 2>&1)" || true
uid="$(sed -n 1p <<<"$status")"
[ "$uid" != 0 ] && [ -n "$uid" ] && pass "with the socket mounted: uid $uid" ||
  fail "with the socket mounted the command runs as uid '$uid'"
sed -n 2p <<<"$status" | tr ' ' '\n' | grep -qx "$socket_gid" &&
  pass "with the socket mounted: has the socket's group $socket_gid" ||
  fail "with the socket mounted: groups '$(sed -n 2p <<<"$status")' lack $socket_gid"
grep -Eq '^CapEff:[[:space:]]+0+$' <<<"$status" && grep -Eq '^NoNewPrivs:[[:space:]]+1$' <<<"$status" &&
  pass "no capabilities, no_new_privs" || fail "capabilities or no_new_privs: $(grep -E '^(Cap|NoNew)' <<<"$status")"
got="$(docker run --rm -v /var/run/docker.sock:/var/run/docker.sock "$image" \
  curl -sS --max-time 10 --unix-socket /var/run/docker.sock http://docker/_ping 2>&1)" || true
[ "$got" = OK ] && pass "the socket is usable with that group" || fail "the socket is not usable: $got"

ports="$(docker image inspect -f '{{json .Config.ExposedPorts}}' "$image")"
[[ "$ports" == *'"8000/tcp"'* ]] && pass "exposes 8000" || fail "exposed ports: $ports"
health="$(docker image inspect -f '{{json .Config.Healthcheck.Test}}' "$image")"
health_url="$(docker image inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$image" |
  sed -n 's/^EXECMCP_HEALTH_URL=//p')"
[[ "$health" == *curl*EXECMCP_HEALTH_URL* ]] && [ "$health_url" = http://127.0.0.1:8000/health ] &&
  pass "HEALTHCHECK curls $health_url" || fail "HEALTHCHECK $health with EXECMCP_HEALTH_URL '$health_url'"
cmd="$(docker image inspect -f '{{json .Config.Cmd}}' "$image")"
[ "$cmd" = '["execmcp","serve","--config","/etc/execmcp/config.yaml","--http","0.0.0.0:8000"]' ] &&
  pass "default command serves HTTP on 8000" || fail "default command: $cmd"

# PID 1 (tini) runs as execmcp too: as root without CAP_KILL (compose drops every capability but
# the three drop-to-user needs) it could not forward SIGTERM to the server and would exit at once,
# leaving the agents' containers behind.
name="execmcp_server_image_$run_tag"
cleanups+=("docker rm -f $name")
docker run -d --name "$name" --cap-drop ALL --cap-add SETUID --cap-add SETGID --cap-add SETPCAP \
  "$image" sleep 300 >/dev/null
# drop-to-user is PID 1 for a moment before it execs tini: look until it has.
for _ in $(seq 50); do
  got="$(docker exec "$name" sh -c 'cat /proc/1/comm; sed -n "s/^Uid:[[:space:]]*\([0-9]*\).*/\1/p" /proc/1/status' 2>&1 | tr '\n' ' ')" || true
  [ "$got" = "tini 1000 " ] && break
  sleep 0.1
done
[ "$got" = "tini 1000 " ] && pass "PID 1 is tini as execmcp" || fail "PID 1: '$got'"
docker stop -t 20 "$name" >/dev/null 2>&1 || true
code="$(docker inspect -f '{{.State.ExitCode}}' "$name" 2>/dev/null || true)"
[ "$code" = 143 ] && pass "docker stop without CAP_KILL: SIGTERM reaches the command (exit 143)" ||
  fail "docker stop without CAP_KILL: exit code '$code'; $(docker logs --tail 5 "$name" 2>&1)"

# The example config is valid for the execmcp in the image.
got="$(docker run --rm -e EXECMCP_WORKSPACES=/tmp/ws \
  -v "$repo/docker/server/config.example.yaml:/etc/execmcp/config.yaml:ro" "$image" \
  execmcp check-config /etc/execmcp/config.yaml 2>&1)" || true
[[ "$got" == *": OK"* ]] && pass "docker/server/config.example.yaml passes check-config" ||
  fail "check-config of the example config: $got"

finish
