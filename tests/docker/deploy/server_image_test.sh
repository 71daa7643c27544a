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

finish
