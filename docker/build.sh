#!/usr/bin/env bash
# Builds the runtime image the Docker backends start agents in, skipping the build when nothing changed.
#   docker/build.sh [-t TAG] [--base IMAGE] [--uid N] [--no-cache] [--force]
#     -t, --tag TAG   image to build (default execmcp/runtime:latest)
#     --base IMAGE    base image (default execmcp/debian-base:bookworm, made offline by
#                     docker/make-base-image.sh when missing; e.g. python:3.12-slim with a registry)
#     --uid N         uid/gid of the in-container user execmcp (default 1000)
#     --no-cache      build without the layer cache (implies --force)
#     --force         build even if an up-to-date image exists
#     -h, --help      this help
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
default_base="execmcp/debian-base:bookworm"
tag="execmcp/runtime:latest"
base="$default_base"
uid=1000
no_cache=0
force=0
hash_label="org.execmcp.build-hash"

say() { echo "build.sh: $*" >&2; }
die() {
  say "$*"
  exit 1
}
usage() { sed -n '2,10p' "$0"; }

while [ $# -gt 0 ]; do
  case "$1" in
    -t | --tag) tag="${2:?$1 needs a value}"; shift 2 ;;
    --base) base="${2:?--base needs a value}"; shift 2 ;;
    --uid) uid="${2:?--uid needs a value}"; shift 2 ;;
    --no-cache) no_cache=1; force=1; shift ;;
    --force) force=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done
[[ "$uid" =~ ^[0-9]+$ ]] || die "--uid expects a number, got '$uid'"

command -v docker >/dev/null 2>&1 || die "docker CLI not found (scripts/install-deps.sh --test installs it)"
docker version >/dev/null 2>&1 ||
  die "cannot reach Docker at ${DOCKER_HOST:-unix:///var/run/docker.sock}; start it with scripts/docker-engine.sh start"

if ! docker image inspect "$base" >/dev/null 2>&1; then
  case "$base" in
    execmcp/debian-base:*)
      say "base image $base missing; building it offline"
      "$here/make-base-image.sh" --tag "$base" --suite "${base#execmcp/debian-base:}"
      ;;
    *) say "base image $base not present locally; docker will try to pull it" ;;
  esac
fi

# What the image depends on: the Dockerfile, the build args and the exact base image (a rebuilt
# base gets a new id). Stored as a label and compared to skip rebuilding an unchanged image.
base_id="$(docker image inspect -f '{{.Id}}' "$base" 2>/dev/null || echo "pull:$base")"
build_hash="$({
  cat "$here/Dockerfile"
  printf 'BASE_IMAGE=%s\nbase_id=%s\nEXECMCP_UID=%s\n' "$base" "$base_id" "$uid"
} | sha256sum | cut -c1-32)"

if [ "$force" = 0 ]; then
  have="$(docker image inspect -f "{{ index .Config.Labels \"$hash_label\" }}" "$tag" 2>/dev/null || true)"
  if [ "$have" = "$build_hash" ]; then
    say "$tag is up to date (use --force to rebuild)"
    exit 0
  fi
fi

args=(--tag "$tag" --label "$hash_label=$build_hash"
  --build-arg "BASE_IMAGE=$base" --build-arg "EXECMCP_UID=$uid" --build-arg "EXECMCP_GID=$uid")
[ "$no_cache" = 1 ] && args+=(--no-cache)

say "building $tag from $base"
start=$SECONDS
# The Dockerfile copies nothing from a context, so it is sent alone on stdin: no context upload,
# and nothing in the repo can change the build by accident.
docker build "${args[@]}" - <"$here/Dockerfile"
size="$(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}')"
say "built $tag ($size) in $((SECONDS - start))s"
