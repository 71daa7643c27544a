#!/usr/bin/env bash
# Installs what execmcp needs on Debian 12, by package name, skipping what is already there.
#   scripts/install-deps.sh            build + run dependencies
#   scripts/install-deps.sh --deploy   also what building and running the deployment needs (Docker
#                                      engine, debootstrap, Compose v1, curl)
#   scripts/install-deps.sh --test     also what the test suites need (all of --deploy, Node.js)
#   scripts/install-deps.sh --fuzz     also clang and libFuzzer for the fuzz targets
set -euo pipefail

want_test=0
want_fuzz=0
want_deploy=0
for arg in "$@"; do
  case "$arg" in
    --test) want_test=1 ;;
    --fuzz) want_fuzz=1 ;;
    --deploy) want_deploy=1 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates clang-format ccache
  libboost-dev libboost-filesystem-dev libboost-system-dev
  nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev
  libssl-dev libjwt-dev zlib1g-dev
  # The handshake of execmcp-runner reached over the network (HMAC, randomness); libsodium.a is
  # linked into the static runner.
  libsodium-dev
  bubblewrap libseccomp-dev
  # The local backend's `network: egress` runs a Squid of its own per sandbox; the system squid
  # service is kept from starting (below).
  squid
  libgtest-dev libgmock-dev
  python3 python3-venv
)
if [ "$want_test" = 1 ] || [ "$want_deploy" = 1 ]; then
  # HAProxy is not needed on the host: the socket proxy's image installs it inside its build.
  packages+=(docker.io debootstrap docker-compose curl)
fi
if [ "$want_test" = 1 ]; then
  # The HTTP server tests make throwaway certificates and keys with openssl.
  packages+=(iproute2 procps openssl)
  # The Docker tests' image without Python or a C library: a static busybox, imported offline
  # (tests/docker/fixtures/build-busybox-image.sh).
  packages+=(busybox-static)
  # The docker-cli backend over SSH: the tests start a throwaway sshd on a loopback port
  # (tests/docker/ssh/with-sshd.sh); the system sshd is kept from starting (below).
  packages+=(openssh-server)
  # ... and with Podman as the binary, rootful (tests/docker/podman/with-podman.sh). catatonit is
  # only a Recommends of podman, but --init needs it (mounted at /run/podman-init).
  packages+=(podman catatonit)
  # gVisor, for the Docker suites' second run with `runtime: runsc`; scripts/docker-engine.sh
  # registers it with the engine it starts.
  packages+=(runsc)
  # The MCP end-to-end tests drive the server with the official TypeScript SDK client.
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
fi

if [ "$want_fuzz" = 1 ]; then
  packages+=(clang libclang-rt-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present" >&2
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}" >&2

# openssh-server's postinst starts and enables sshd on 0.0.0.0:22; the tests only need the binary.
# Debian's init script and systemd units do nothing while /etc/ssh/sshd_not_to_be_run exists, so
# create it when we are the ones installing sshd (a machine with its own sshd is left alone).
new_sshd=0
if [[ " ${missing[*]} " == *" openssh-server "* ]] && [ ! -e /usr/sbin/sshd ]; then
  new_sshd=1
  $sudo mkdir -p /etc/ssh
  $sudo touch /etc/ssh/sshd_not_to_be_run
fi

# squid's postinst starts and enables the system proxy on *:3128; execmcp only needs the binary
# (each sandbox gets a Squid of its own). A policy-rc.d that answers 101 keeps invoke-rc.d from
# starting any service for the length of the install (one already there is kept).
new_squid=0
own_policy_rc=0
policy_rc=/usr/sbin/policy-rc.d
if [[ " ${missing[*]} " == *" squid "* ]] && [ ! -e /usr/sbin/squid ]; then
  new_squid=1
  if [ ! -e "$policy_rc" ]; then
    own_policy_rc=1
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy_rc" >/dev/null
    $sudo chmod 755 "$policy_rc"
    trap '$sudo rm -f "$policy_rc"' EXIT
  fi
fi

export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2

if [ "$new_squid" = 1 ]; then
  if [ "$own_policy_rc" = 1 ]; then
    $sudo rm -f "$policy_rc"
    trap - EXIT
  fi
  if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    $sudo systemctl disable --now squid.service >/dev/null 2>&1 || true
  elif command -v update-rc.d >/dev/null 2>&1; then
    $sudo update-rc.d squid disable >/dev/null 2>&1 || true
  fi
  echo "install-deps: the system squid stays off (execmcp starts a Squid per sandbox)" >&2
fi

if [ "$new_sshd" = 1 ]; then
  # Belt and braces for systemd machines: not enabled at boot either.
  if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    $sudo systemctl disable --now ssh.service ssh.socket >/dev/null 2>&1 || true
  fi
  echo "install-deps: the system sshd stays off (delete /etc/ssh/sshd_not_to_be_run to run it)" >&2
fi
