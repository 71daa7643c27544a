#!/usr/bin/env bash
# Builds the server image from the repository, sending only the sources it needs as the build context.
#   docker/server/build.sh [-t TAG] [--base IMAGE] [--no-cache]
#     -t, --tag TAG   image to build (default execmcp/server:latest)
#     --base IMAGE    base image for both stages (default execmcp/debian-base:bookworm)
#     --no-cache      build without the layer cache
#     -h, --help      this help
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tag="execmcp/server:latest"
base="execmcp/debian-base:bookworm"
extra=()

say() { echo "server/build.sh: $*" >&2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -t | --tag) tag="${2:?$1 needs a value}"; shift 2 ;;
    --base) base="${2:?--base needs a value}"; shift 2 ;;
    --no-cache) extra+=(--no-cache); shift ;;
    -h | --help) sed -n '2,7p' "$0"; exit 0 ;;
    *) sed -n '2,7p' "$0" >&2; say "unknown option '$1'"; exit 2 ;;
  esac
done

docker version >/dev/null 2>&1 || {
  say "cannot reach Docker at ${DOCKER_HOST:-unix:///var/run/docker.sock}; start it with scripts/docker-engine.sh start"
  exit 1
}
if ! docker image inspect "$base" >/dev/null 2>&1 && [[ "$base" == execmcp/debian-base:* ]]; then
  "$repo/docker/make-base-image.sh" --tag "$base" --suite "${base#execmcp/debian-base:}"
fi

say "building $tag from $base"
start=$SECONDS
# A tar of just these paths is the context: no build trees, no .git, whatever lies around the repo.
tar -C "$repo" -c --exclude='.git' \
  CMakeLists.txt sdk host plugins docker/server/Dockerfile |
  docker build "${extra[@]}" --tag "$tag" --build-arg "BASE_IMAGE=$base" -f docker/server/Dockerfile -
say "built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}')) in $((SECONDS - start))s"
