#!/usr/bin/env bash
# Installs, by Debian 12 package name, what building and running the deployment needs on the host:
# the engine and CLI (docker.io), debootstrap for the offline base image, Compose v1
# (docker-compose 1.29, Python) for docker/compose.yaml, and curl for the deployment tests.
# HAProxy is not needed here: the proxy image installs it from Debian inside the build.
#   scripts/install-deploy-deps.sh
set -euo pipefail
[ "${1:-}" != -h ] && [ "${1:-}" != --help ] || { sed -n '2,6p' "$0"; exit 0; }

packages=(docker.io debootstrap docker-compose curl)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deploy-deps: all ${#packages[@]} packages present" >&2
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deploy-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
