#!/usr/bin/env bash
# Tests with-podman.sh and, through it, the Podman calls the docker-cli backend makes: with the
# exported settings only (binary, global flags, explicit environment), a container made with the
# backend's flags starts, takes stdin through exec -i, takes the runner through `cp -` owned by
# root, has the limits asked for, logs, inspects as expected and goes away with its volume.
#   fixture_test.sh            (label docker; exit 77 = skipped with EXECMCP_DOCKER_TESTS=0)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

die() { echo "FAIL: $*" >&2; exit 1; }
[ "${EXECMCP_DOCKER_TESTS:-1}" != 0 ] || { echo "skipped: EXECMCP_DOCKER_TESTS=0"; exit 77; }
command -v python3 >/dev/null 2>&1 || die "python3 is needed"

# shellcheck disable=SC2016 # expanded by the inner bash
inner='
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 3; }
[ "$EXECMCP_TEST_OUTSIDE_CLI" = podman ] || fail "EXECMCP_TEST_OUTSIDE_CLI=$EXECMCP_TEST_OUTSIDE_CLI"
# What the backend will run: the binary from cli_env PATH, the flags, exactly cli_env as environment.
mapfile -t argv < <(printf %s "$EXECMCP_TEST_BACKEND_SETTINGS" | python3 -c "
import json, sys
s = json.load(sys.stdin)
print(\"env\"); print(\"-i\")
for k, v in s[\"cli_env\"].items(): print(k + \"=\" + v)
print(s[\"docker_binary\"])
for f in s[\"docker_flags\"]: print(f)")
image="$(printf %s "$EXECMCP_TEST_BACKEND_SETTINGS" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"image\"])")"
cli() { "${argv[@]}" "$@"; }
name="execmcp-podman-fixture-$$"
ws="$(mktemp -d)"; chown 1000:1000 "$ws"
trap "cli rm -f -v $name >/dev/null 2>&1 || true; rm -rf $ws" EXIT
cli create --name "$name" --pull never --label execmcp.test=podman-fixture --user 1000:1000 \
  --workdir "$ws" -e FOO=bar --network none --cap-drop ALL --security-opt no-new-privileges --init \
  --log-driver json-file --log-opt max-size=1m --log-opt max-file=2 --memory 268435456 \
  --memory-swap 268435456 --cpus 1.5 --read-only --read-only-tmpfs=false \
  --tmpfs /tmp:rw,nosuid,nodev,exec,mode=1777,size=67108864 --pids-limit 128 \
  --mount "type=bind,source=$ws,target=$ws" --mount type=volume,target=/.execmcp \
  "$image" sleep infinity >/dev/null
cli start "$name" >/dev/null
out="$(printf "from stdin" | cli exec -i -u 1000:1000 -w "$ws" "$name" sh -c "cat; echo; echo \$FOO; exit 7")" && fail "exit status lost"
[ "$?" = 7 ] || fail "exec -i exit status"
[ "$out" = "from stdin
bar" ] || fail "exec -i said: $out"
# The runner goes in as root-owned, and so does its directory: --archive=false keeps the tar owner
# (Podman would chown to the container user) and the ./ entry resets the volume Podman chowned.
t="$(mktemp -d)"; chmod 755 "$t"; printf "#!/bin/sh\necho runner-ok\n" >"$t/execmcp-runner"; chmod 555 "$t/execmcp-runner"
tar --owner=0 --group=0 -C "$t" -cf - . | cli cp --archive=false - "$name:/.execmcp"
rm -rf "$t"
[ "$(cli exec "$name" /.execmcp/execmcp-runner)" = runner-ok ] || fail "runner not runnable"
own="$(cli exec "$name" stat -c "%u:%g %a" /.execmcp /.execmcp/execmcp-runner | tr "\n" " ")"
[ "$own" = "0:0 755 0:0 555 " ] || fail "runner ownership: $own"
cli exec "$name" touch /.execmcp/x 2>/dev/null && fail "the agent user can write next to the runner"
cli exec "$name" touch /etc/x 2>/dev/null && fail "the root file system is writable"
limits="$(cli exec "$name" cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null | tr "\n" " ")" || limits=""
[ -z "$limits" ] || [ "$limits" = "128 268435456 " ] || fail "limits: $limits"
[ "$(cli exec "$name" grep CapEff /proc/self/status | tr -d "\t ")" = CapEff:0000000000000000 ] || fail "capabilities left"
cli exec "$name" sh -c "echo to-log >/proc/1/fd/1"
cli logs "$name" 2>&1 | grep -qx to-log || fail "podman logs lacks what PID 1 printed"
doc="$(cli inspect --type container "$name")"
printf %s "$doc" | python3 -c "
import json, sys
d = json.load(sys.stdin)[0]
assert d[\"Name\"] == \"$name\", d[\"Name\"]                      # no leading slash
assert d[\"State\"][\"Running\"] is True and d[\"State\"][\"OOMKilled\"] is False
assert d[\"Config\"][\"Labels\"][\"execmcp.test\"] == \"podman-fixture\"
m = {x[\"Destination\"]: x for x in d[\"Mounts\"]}
assert m[\"$ws\"][\"Type\"] == \"bind\" and m[\"$ws\"][\"RW\"] is True and m[\"$ws\"][\"Source\"] == \"$ws\"
assert m[\"/.execmcp\"][\"Type\"] == \"volume\"
assert d[\"HostConfig\"][\"ReadonlyRootfs\"] is True and d[\"HostConfig\"][\"Init\"] is True
assert d[\"HostConfig\"][\"PidsLimit\"] == 128 and d[\"HostConfig\"][\"NanoCpus\"] == 1500000000
assert d[\"EffectiveCaps\"] in ([], None), d[\"EffectiveCaps\"]
" || fail "inspect document: $doc"
volume="$(printf %s "$doc" | python3 -c "import json,sys; print([m[\"Name\"] for m in json.load(sys.stdin)[0][\"Mounts\"] if m[\"Type\"] == \"volume\"][0])")"
cli rm -f -v "$name" >/dev/null
cli volume exists "$volume" && fail "the anonymous volume outlived rm -f -v"
cli inspect --type container "$name" >/dev/null 2>&1 && fail "the container outlived rm -f -v"
exit 42
'
rc=0
"$here/with-podman.sh" bash -c "$inner" || rc=$?
[ "$rc" = 42 ] || die "the podman checks exited $rc (expected 42)"
echo "ok: podman create/start/exec -i/cp/logs/inspect/rm with the exported settings"
