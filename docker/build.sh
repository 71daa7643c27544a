#!/usr/bin/env bash
# Builds execmcp's images on the offline Debian base, skipping any image whose inputs did not change.
#   docker/build.sh [--runtime] [--sudo] [--server] [--proxy] [--egress] [--swarm-runtime]
#                   [--swarm-test] [--all] [options]
#     --runtime       the image agents' commands run in (execmcp/runtime:latest); the default
#     --sudo          the runtime image with passwordless sudo (execmcp/runtime-sudo:latest), for
#                     the backends' `sudo: true`; builds the runtime image first when needed
#     --server        the execmcp server (execmcp/server:latest), see docs/deployment.md
#     --proxy         the Engine API socket proxy (execmcp/proxy:latest), see docs/deployment.md
#     --egress        the egress proxy of agents with `network: egress` (execmcp/egress:latest),
#                     see docs/docker-backend.md
#     --swarm-runtime the runtime image plus the static execmcp-runner at
#                     /usr/lib/execmcp/execmcp-runner (execmcp/swarm-runtime:latest): what the
#                     docker-swarm backend's services run (the runner listens in the task); builds
#                     the runtime image first when needed. Needs --runner or --from-build
#     --swarm-test    the docker-swarm tests' small image (execmcp/swarm-runner-test:latest): the
#                     static busybox of tests/docker/fixtures/build-busybox-image.sh plus the same
#                     runner, a few MB to load into every node. Needs --runner or --from-build
#     --all           runtime, server, proxy and egress (not --sudo nor the swarm ones: opt-in)
#     -t, --tag TAG   tag of the image to build (only with one image)
#     --base IMAGE    base image (default execmcp/debian-base:bookworm, made offline by
#                     docker/make-base-image.sh when missing; e.g. python:3.12-slim with a registry)
#     --uid N         uid/gid of the user execmcp in the runtime and server images (default 1000)
#     --from-build DIR  server: install this CMake build tree (cmake --install) instead of
#                     compiling in a container; the host must run the base image's Debian release
#     --runner FILE   the static execmcp-runner the swarm images get (default with --from-build:
#                     DIR/lib/execmcp/execmcp-runner, the CMake target execmcp_runner)
#     --no-cache      build without the layer cache (implies --force)
#     --force         build even if an up-to-date image exists
#     -h, --help      this help
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
default_base="execmcp/debian-base:bookworm"
tag=""
base="$default_base"
uid=1000
no_cache=0
force=0
from_build=""
runner=""
images=()
hash_label="org.execmcp.build-hash"

say() { echo "build.sh: $*" >&2; }
die() {
  say "$*"
  exit 1
}
usage() { sed -n '2,30p' "$0"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --runtime | --sudo | --server | --proxy | --egress) images+=("${1#--}"); shift ;;
    --swarm-runtime) images+=(swarm_runtime); shift ;;
    --swarm-test) images+=(swarm_test); shift ;;
    --runner) runner="${2:?--runner needs a value}"; shift 2 ;;
    --all) images+=(runtime server proxy egress); shift ;;
    -t | --tag) tag="${2:?$1 needs a value}"; shift 2 ;;
    --base) base="${2:?--base needs a value}"; shift 2 ;;
    --uid) uid="${2:?--uid needs a value}"; shift 2 ;;
    --from-build) from_build="${2:?--from-build needs a value}"; shift 2 ;;
    --no-cache) no_cache=1; force=1; shift ;;
    --force) force=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done
[[ "$uid" =~ ^[0-9]+$ ]] || die "--uid expects a number, got '$uid'"
[ "${#images[@]}" -gt 0 ] || images=(runtime)
[ -z "$tag" ] || [ "${#images[@]}" = 1 ] || die "-t names one image; build the others in another run"
if [ -n "$from_build" ]; then
  [ -f "$from_build/CMakeCache.txt" ] || die "--from-build: '$from_build' is not a CMake build tree"
  from_build="$(cd "$from_build" && pwd)"
fi

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
base_id="$(docker image inspect -f '{{.Id}}' "$base" 2>/dev/null || echo "pull:$base")"

work="$(mktemp -d "${TMPDIR:-/tmp}/execmcp-images.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# True (and says so) when image $1 carries build hash $2, unless --force.
up_to_date() {
  [ "$force" = 0 ] || return 1
  local have
  have="$(docker image inspect -f "{{ index .Config.Labels \"$hash_label\" }}" "$1" 2>/dev/null || true)"
  [ "$have" = "$2" ] || return 1
  say "$1 is up to date (use --force to rebuild)"
}

report() { say "built $1 ($(docker image inspect -f '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1/1e6}')) in $2s"; }

# Builds image $1 from directory $2 (its Dockerfile named by $3, relative to $2) with build args
# $4...; skipped when the same context, base and args built it before. The context goes as a tar
# with fixed names, times and owners, so its hash changes only when a file's content or mode does.
build_from_context() {
  local image="$1" dir="$2" dockerfile="$3"
  shift 3
  local args=(--build-arg "BASE_IMAGE=$base" "$@")
  tar -C "$dir" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$work/context.tar" .
  local build_hash
  build_hash="$({
    sha256sum <"$work/context.tar"
    printf '%s\n' "base_id=$base_id" "${args[@]}"
  } | sha256sum | cut -c1-32)"
  up_to_date "$image" "$build_hash" && return 0
  [ "$no_cache" = 1 ] && args+=(--no-cache)
  say "building $image from $base"
  local start=$SECONDS
  docker build --tag "$image" --label "$hash_label=$build_hash" -f "$dockerfile" "${args[@]}" - \
    <"$work/context.tar"
  report "$image" $((SECONDS - start))
}

build_runtime() {
  local image="${tag:-execmcp/runtime:latest}"
  # What the image depends on: the Dockerfile, the build args and the exact base image (a rebuilt
  # base gets a new id). Stored as a label and compared to skip rebuilding an unchanged image.
  local build_hash
  build_hash="$({
    cat "$here/Dockerfile"
    printf 'BASE_IMAGE=%s\nbase_id=%s\nEXECMCP_UID=%s\n' "$base" "$base_id" "$uid"
  } | sha256sum | cut -c1-32)"
  up_to_date "$image" "$build_hash" && return 0
  local args=(--tag "$image" --label "$hash_label=$build_hash"
    --build-arg "BASE_IMAGE=$base" --build-arg "EXECMCP_UID=$uid" --build-arg "EXECMCP_GID=$uid")
  [ "$no_cache" = 1 ] && args+=(--no-cache)
  say "building $image from $base"
  local start=$SECONDS
  # The Dockerfile copies nothing from a context, so it is sent alone on stdin: no context upload,
  # and nothing in the repo can change the build by accident.
  docker build "${args[@]}" - <"$here/Dockerfile"
  report "$image" $((SECONDS - start))
}

# FROM the runtime image (built or refreshed first, untagged by -t), whose id is part of the hash:
# a rebuilt runtime image rebuilds this one.
build_sudo() {
  local image="${tag:-execmcp/runtime-sudo:latest}" runtime="execmcp/runtime:latest"
  tag="" build_runtime
  local runtime_id build_hash
  runtime_id="$(docker image inspect -f '{{.Id}}' "$runtime")"
  build_hash="$({
    cat "$here/sudo.Dockerfile"
    printf 'RUNTIME_IMAGE=%s\nruntime_id=%s\n' "$runtime" "$runtime_id"
  } | sha256sum | cut -c1-32)"
  up_to_date "$image" "$build_hash" && return 0
  local args=(--tag "$image" --label "$hash_label=$build_hash" --build-arg "RUNTIME_IMAGE=$runtime")
  [ "$no_cache" = 1 ] && args+=(--no-cache)
  say "building $image from $runtime"
  local start=$SECONDS
  docker build "${args[@]}" - <"$here/sudo.Dockerfile"
  report "$image" $((SECONDS - start))
}

build_proxy() {
  local ctx="$work/proxy"
  mkdir -p "$ctx"
  cp "$here/proxy/Dockerfile" "$here/proxy/haproxy.cfg" "$here/server/drop-to-user.sh" "$ctx/"
  build_from_context "${tag:-execmcp/proxy:latest}" "$ctx" Dockerfile
}

build_egress() {
  local ctx="$work/egress"
  mkdir -p "$ctx"
  cp "$here/egress/Dockerfile" "$here/egress/entrypoint.sh" "$ctx/"
  build_from_context "${tag:-execmcp/egress:latest}" "$ctx" Dockerfile
}

# Puts the install tree in $1/stage and the Debian packages its libraries need in
# $1/runtime-packages.txt, from the host's build tree.
stage_from_build() {
  local ctx="$1" host_release base_release
  host_release="$(. /etc/os-release && echo "${ID:-}:${VERSION_CODENAME:-}")"
  base_release="$(docker run --rm --entrypoint /bin/sh "$base" -c '. /etc/os-release && echo "${ID:-}:${VERSION_CODENAME:-}"')"
  [ "$host_release" = "$base_release" ] ||
    die "--from-build: this host runs $host_release but $base is $base_release; its libraries would not match (build without --from-build)"
  say "installing $from_build"
  cmake --install "$from_build" --prefix "$ctx/stage" --strip >"$work/install.log" 2>&1 ||
    { cat "$work/install.log" >&2; die "cmake --install $from_build failed"; }
  rm -rf "$ctx/stage/include" "$ctx/stage/lib/cmake"
  find "$ctx/stage" -name '*.a' -delete
  "$here/server/runtime-packages.sh" "$ctx/stage" >"$ctx/runtime-packages.txt"
}

# The same from source: compile in execmcp/server-build (cached like any image), then copy out.
stage_from_source() {
  local ctx="$1" src="$work/compile-src" id
  mkdir -p "$src"
  tar -C "$repo" -c --exclude='.git' \
    CMakeLists.txt sdk libs programs host plugins scripts/install-deps.sh \
    docker/server/runtime-packages.sh docker/server/compile.Dockerfile | tar -C "$src" -x
  build_from_context execmcp/server-build:latest "$src" docker/server/compile.Dockerfile \
    --build-arg "JOBS=${EXECMCP_JOBS:-2}"
  id="$(docker create execmcp/server-build:latest)"
  docker cp "$id:/stage" "$ctx/stage" && docker cp "$id:/runtime-packages.txt" "$ctx/" ||
    { docker rm "$id" >/dev/null; die "copying the install tree out of execmcp/server-build failed"; }
  docker rm "$id" >/dev/null
}

build_server() {
  local ctx="$work/server"
  mkdir -p "$ctx"
  if [ -n "$from_build" ]; then stage_from_build "$ctx"; else stage_from_source "$ctx"; fi
  cp "$here/server/Dockerfile" "$here/server/drop-to-user.sh" "$ctx/"
  build_from_context "${tag:-execmcp/server:latest}" "$ctx" Dockerfile \
    --build-arg "EXECMCP_UID=$uid" --build-arg "EXECMCP_GID=$uid"
}

# The static runner the swarm images get, checked: a file, statically linked (the images have no
# C library of its kind, or none at all), and the protocol version it speaks (for the label).
runner_version=""
check_runner() {
  [ -n "$runner_version" ] && return 0
  if [ -z "$runner" ] && [ -n "$from_build" ]; then runner="$from_build/lib/execmcp/execmcp-runner"; fi
  [ -n "$runner" ] || die "the swarm images need the static execmcp-runner: --runner FILE or --from-build DIR (cmake --build DIR --target execmcp_runner)"
  [[ -f "$runner" && -x "$runner" ]] || die "--runner: no executable at '$runner'"
  if ldd "$runner" >/dev/null 2>&1; then
    die "$runner is dynamically linked: the swarm images need the static runner (programs/runner, libsodium.a)"
  fi
  runner_version="$(grep -aoE 'execmcp-runner/[0-9]+' "$runner" | sort -u)"
  [[ -n "$runner_version" && "$(printf '%s\n' "$runner_version" | wc -l)" = 1 ]] ||
    die "cannot tell the protocol version of $runner (found: '${runner_version//$'\n'/ }')"
}

# Image $1 FROM image $2 (built first by the caller) plus the runner, from swarm-runner.Dockerfile;
# the base's id and the runner's bytes are in the build hash.
build_with_runner() {
  local image="$1" from="$2" ctx="$work/swarm-$RANDOM"
  check_runner
  mkdir -p "$ctx"
  cp "$here/swarm-runner.Dockerfile" "$ctx/Dockerfile"
  cp "$runner" "$ctx/execmcp-runner"
  chmod 0755 "$ctx/execmcp-runner"
  # build_from_context reads base and base_id: here the image this one is made FROM.
  local base="$from" base_id
  base_id="$(docker image inspect -f '{{.Id}}' "$from")"
  build_from_context "$image" "$ctx" Dockerfile --build-arg "RUNNER_VERSION=$runner_version" \
    --build-arg "EXECMCP_UID=$uid" --build-arg "EXECMCP_GID=$uid"
}

build_swarm_runtime() {
  local image="${tag:-execmcp/swarm-runtime:latest}"
  tag="" build_runtime
  build_with_runner "$image" execmcp/runtime:latest
}

build_swarm_test() {
  local image="${tag:-execmcp/swarm-runner-test:latest}"
  check_runner
  "$repo/tests/docker/fixtures/build-busybox-image.sh" >&2
  build_with_runner "$image" execmcp/test-busybox:latest
}

done_images=" "
for image in "${images[@]}"; do
  case "$done_images" in *" $image "*) continue ;; esac
  "build_$image"
  done_images+="$image "
done
