#!/usr/bin/env bash
# Runs a command with a throwaway sshd on 127.0.0.1, so the docker-cli backend can be tested over
# DOCKER_HOST=ssh://… against this machine's engine without anything leaving the machine.
#   tests/docker/ssh/with-sshd.sh COMMAND [ARG…]
# Everything lives in one mktemp directory (host key, client key, known_hosts, ssh config, log)
# and is removed, with the sshd, when the command ends, however it ends. The exit status is the
# command's (or 1 when the sshd cannot be set up). EXECMCP_TEST_SSH_USER picks the login user
# (default: the caller); EXECMCP_TEST_SSH_MULTIPLEX=1 makes the ssh shim share one connection
# (ControlMaster/ControlPersist, the documented speed-up: docker 20.10 opens one ssh connection
# per CLI call, two for exec). The command sees:
#   EXECMCP_TEST_BACKEND_SETTINGS  {"docker_host":"ssh://USER@127.0.0.1:PORT",
#                                   "cli_env":{"PATH":"DIR/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}
#   EXECMCP_TEST_SSH_TARGET        USER@127.0.0.1:PORT
#   EXECMCP_TEST_SSH_DIR           DIR, which also holds, for tests of failures,
#                                  DIR/wrong-key/bin/ssh     (an ssh that offers a key sshd refuses)
#                                  DIR/unknown-host/bin/ssh  (an ssh with an empty known_hosts)
# DIR/bin/ssh runs /usr/bin/ssh -F DIR/ssh_config (BatchMode, IdentitiesOnly, strict host key
# check): ssh reads ~/.ssh/config from the passwd home, not $HOME, so a shim first in the CLI's
# PATH is the one way to give docker's ssh helper our options. Needs root (sshd's privilege
# separation) and Debian's openssh-server (scripts/install-deps.sh --test).
set -euo pipefail

say() { echo "with-sshd: $*" >&2; }

if [ "$#" -eq 0 ]; then
  sed -n '2,22p' "$0" >&2
  exit 2
fi
sshd_bin=/usr/sbin/sshd # absolute: sshd re-executes itself and refuses a relative path
if [ ! -x "$sshd_bin" ]; then
  say "$sshd_bin not found: install openssh-server (scripts/install-deps.sh --test)"
  exit 1
fi
# The login user: root in CI; any user with docker in its PATH and access to the socket works.
user="${EXECMCP_TEST_SSH_USER:-$(id -un)}"

dir="$(mktemp -d "${TMPDIR:-/tmp}/execmcp-sshd.XXXXXX")"
sshd_pid=""
watchdog_pid=""
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  if [ -n "$sshd_pid" ] && [ "${EXECMCP_TEST_SSH_MULTIPLEX:-0}" = 1 ]; then
    /usr/bin/ssh -F "$dir/ssh_config" -O exit 127.0.0.1 >/dev/null 2>&1 || true
  fi
  if [ -n "$sshd_pid" ]; then
    # Sessions still open (a docker CLI that outlived the command) are the listener's children.
    pkill -TERM -P "$sshd_pid" 2>/dev/null || true
    kill -TERM "$sshd_pid" 2>/dev/null || true
    wait "$sshd_pid" 2>/dev/null || true
  fi
  if [ -n "$watchdog_pid" ]; then
    kill -TERM "$watchdog_pid" 2>/dev/null || true
    wait "$watchdog_pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p /run/sshd # Debian's privilege separation directory (a tmpfs: gone after a reboot)
ssh-keygen -q -t ed25519 -N '' -C execmcp-test-host -f "$dir/host_key"
ssh-keygen -q -t ed25519 -N '' -C execmcp-test-client -f "$dir/id"
ssh-keygen -q -t ed25519 -N '' -C execmcp-test-wrong -f "$dir/wrong_id"
# The session's HOME is an empty directory of ours: the login shell (bash, which sources ~/.bashrc
# for every ssh command) then reads none of the account's start-up files, which on a developer's
# machine can cost more than the docker CLI call itself (0.6 s of pyenv here), once per CLI call.
mkdir -p "$dir/home"
printf 'environment="HOME=%s" %s\n' "$dir/home" "$(cat "$dir/id.pub")" >"$dir/authorized_keys"
chmod 600 "$dir/authorized_keys"

# Starts sshd on $port; 0 = listening, 1 = the port is taken, 2 = any other failure.
start_sshd() {
  cat >"$dir/sshd_config" <<CONF
ListenAddress 127.0.0.1:$port
HostKey $dir/host_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PermitUserEnvironment HOME
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
# No PAM: Debian's pam_loginuid fails inside containers. The price: sshd refuses an account whose
# password is locked ('!' in /etc/shadow), detected below.
UsePAM no
# The keys live under a world-writable /tmp.
StrictModes no
AllowTcpForwarding no
AllowAgentForwarding no
X11Forwarding no
PermitTTY no
PrintMotd no
# Every docker CLI call is one ssh connection; a parallel suite opens many at once (the default
# 10:30:100 drops some of them at random).
MaxStartups 200
MaxSessions 100
LoginGraceTime 30
LogLevel VERBOSE
CONF
  : >"$dir/sshd.log"
  "$sshd_bin" -D -e -f "$dir/sshd_config" </dev/null >/dev/null 2>"$dir/sshd.log" &
  sshd_pid=$!
  local _
  for _ in $(seq 1 100); do
    if grep -q "Server listening on 127.0.0.1 port $port" "$dir/sshd.log"; then return 0; fi
    if ! kill -0 "$sshd_pid" 2>/dev/null; then
      wait "$sshd_pid" 2>/dev/null || true
      sshd_pid=""
      grep -q 'Address already in use' "$dir/sshd.log" && return 1
      return 2
    fi
    sleep 0.05
  done
  say "sshd did not report listening within 5 s"
  return 2
}

port=""
for _ in $(seq 1 20); do
  port="$(shuf -i 20000-60000 -n 1)"
  rc=0
  start_sshd || rc=$?
  [ "$rc" -eq 0 ] && break
  if [ "$rc" -eq 2 ]; then
    say "sshd failed to start; its log:"
    cat "$dir/sshd.log" >&2
    exit 1
  fi
  port=""
done
if [ -z "$port" ]; then
  say "no free port in 20000-60000 after 20 tries"
  exit 1
fi

# The sshd must not outlive this script even when it is killed with SIGKILL (ctest's timeout).
# The watchdog holds none of our output descriptors, so nobody waits for it to close them.
script_pid=$$
(
  while kill -0 "$script_pid" 2>/dev/null; do sleep 2; done
  kill -TERM "$sshd_pid" 2>/dev/null
  rm -rf "$dir"
) </dev/null >/dev/null 2>&1 &
watchdog_pid=$!

# Client side: a strict known_hosts holding exactly this host key, and shims that use it.
host_key_line="[127.0.0.1]:$port $(cut -d' ' -f1,2 "$dir/host_key.pub")"
echo "$host_key_line" >"$dir/known_hosts"
: >"$dir/empty_known_hosts"
write_client() { # write_client NAME IDENTITY KNOWN_HOSTS: NAME/ssh_config and NAME/bin/ssh
  local base="$dir"
  [ "$1" = . ] || base="$dir/$1"
  mkdir -p "$base/bin"
  cat >"$base/ssh_config" <<CONF
Host 127.0.0.1
  Port $port
  IdentityFile $2
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile $3
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  UpdateHostKeys no
  BatchMode yes
  ConnectTimeout 10
  LogLevel ERROR
CONF
  if [ "${EXECMCP_TEST_SSH_MULTIPLEX:-0}" = 1 ]; then
    printf '  ControlMaster auto\n  ControlPath %s/cm-%%C\n  ControlPersist 60\n' "$base" >>"$base/ssh_config"
  fi
  printf '#!/bin/sh\nexec /usr/bin/ssh -F %s "$@"\n' "$base/ssh_config" >"$base/bin/ssh"
  chmod 755 "$base/bin/ssh"
}
write_client . "$dir/id" "$dir/known_hosts"
write_client wrong-key "$dir/wrong_id" "$dir/known_hosts"
write_client unknown-host "$dir/id" "$dir/empty_known_hosts"

# One login before the command: a broken setup fails here, in words, not as a docker error.
if ! out="$("$dir/bin/ssh" -l "$user" 127.0.0.1 true 2>&1 </dev/null)"; then
  say "ssh $user@127.0.0.1:$port failed: $out"
  if grep -q 'account is locked' "$dir/sshd.log"; then
    say "sshd refuses '$user' because its password is locked ('!' in /etc/shadow) and UsePAM is no:" \
      "unlock it without a usable password (usermod -p '*' $user) or set UsePAM yes in this script"
  else
    say "sshd log:"
    cat "$dir/sshd.log" >&2
  fi
  exit 1
fi

export EXECMCP_TEST_SSH_DIR="$dir"
export EXECMCP_TEST_SSH_TARGET="$user@127.0.0.1:$port"
export EXECMCP_TEST_BACKEND_SETTINGS="{\"docker_host\":\"ssh://$user@127.0.0.1:$port\",\"cli_env\":{\"PATH\":\"$dir/bin:/usr/sbin:/usr/bin:/sbin:/bin\"}}"
say "sshd on 127.0.0.1:$port (pid $sshd_pid, dir $dir)"

rc=0
"$@" || rc=$?
exit "$rc"
