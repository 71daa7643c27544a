#!/usr/bin/env bash
# Builds a minimal Debian base image without any container registry: debootstrap + docker import.
#   docker/make-base-image.sh [--tag TAG] [--suite SUITE] [--mirror URL] [--cache DIR] [--force]
#     --tag TAG      image to create (default execmcp/debian-base:bookworm)
#     --suite SUITE  Debian release (default bookworm)
#     --mirror URL   Debian mirror (default: the one this host's apt sources use for SUITE)
#     --cache DIR    keep the downloaded packages in DIR as a debootstrap tarball and reuse it
#     --force        rebuild even if the image exists
#     -h, --help     this help
# Needs root (debootstrap chroots), debootstrap, and a running engine (scripts/docker-engine.sh start).
set -euo pipefail

tag="execmcp/debian-base:bookworm"
suite="bookworm"
mirror=""
cache_dir=""
force=0

say() { echo "make-base-image: $*" >&2; }
die() {
  say "$*"
  exit 1
}
usage() { sed -n '2,10p' "$0"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag="${2:?--tag needs a value}"; shift 2 ;;
    --suite) suite="${2:?--suite needs a value}"; shift 2 ;;
    --mirror) mirror="${2:?--mirror needs a value}"; shift 2 ;;
    --cache) cache_dir="${2:?--cache needs a value}"; shift 2 ;;
    --force) force=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done

# Prints the first URI that this host's apt sources use for suite $1 (deb822 .sources files and
# one-line .list files; disabled files are ignored). Nothing if none matches.
host_mirror_for() {
  local want="$1" f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # deb822: stanzas separated by blank lines; take URIs of a stanza whose Suites lists $want.
    awk -v want="$want" '
      function flush() { if (uris != "" && hit && deb) { split(uris, u, " "); print u[1]; exit } uris = ""; hit = 0; deb = 1 }
      BEGIN { deb = 1 }
      /^[[:space:]]*$/ { flush(); next }
      /^[[:space:]]*#/ { next }
      tolower($1) == "uris:" { uris = ""; for (i = 2; i <= NF; i++) uris = uris " " $i }
      tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == want) hit = 1 }
      tolower($1) == "types:" { deb = 0; for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
      END { flush() }
    ' "$f"
  done | head -n 1 | grep . && return 0
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    # deb [options] URI SUITE COMPONENTS...
    sed -E 's/\[[^]]*\]//' "$f" | awk -v want="$want" '$1 == "deb" && $3 == want { print $2; exit }'
  done | head -n 1
}

command -v docker >/dev/null 2>&1 || die "docker CLI not found (scripts/install-deps.sh --test installs it)"
docker version >/dev/null 2>&1 ||
  die "cannot reach Docker at ${DOCKER_HOST:-unix:///var/run/docker.sock}; start it with scripts/docker-engine.sh start"

if [ "$force" = 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  say "$tag already exists (use --force to rebuild)"
  exit 0
fi

[ "$(id -u)" -eq 0 ] || die "debootstrap needs root; run as root or with sudo"
command -v debootstrap >/dev/null 2>&1 || die "debootstrap not found: apt-get install -y debootstrap"

if [ -z "$mirror" ]; then
  mirror="$(host_mirror_for "$suite" || true)"
  [ -n "$mirror" ] || die "no apt source for '$suite' found in /etc/apt/sources.list*; pass --mirror URL"
fi
security_mirror="$(host_mirror_for "$suite-security" || true)"
say "suite $suite from $mirror"

work="$(mktemp -d "${TMPDIR:-/tmp}/execmcp-base.XXXXXX")"
rootfs="$work/rootfs"
cleanup() {
  # debootstrap may leave proc/sys mounted if interrupted; unmount before deleting.
  local m
  for m in proc sys dev/pts dev; do umount -l "$rootfs/$m" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

debootstrap_args=(--variant=minbase --arch="$(dpkg --print-architecture)")
if [ -n "$cache_dir" ]; then
  mkdir -p "$cache_dir"
  tarball="$(cd "$cache_dir" && pwd)/debootstrap-$suite-minbase-$(dpkg --print-architecture).tgz"
  if [ ! -f "$tarball" ]; then
    say "downloading packages into $tarball"
    debootstrap "${debootstrap_args[@]}" --make-tarball="$tarball" "$suite" "$work/tarball-tmp" "$mirror" >&2
    rm -rf "$work/tarball-tmp"
  else
    say "using cached packages from $tarball"
  fi
  debootstrap_args+=(--unpack-tarball="$tarball")
fi

start=$SECONDS
debootstrap "${debootstrap_args[@]}" "$suite" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 30 "$work/debootstrap.log" >&2
  [ -f "$rootfs/debootstrap/debootstrap.log" ] && tail -n 30 "$rootfs/debootstrap/debootstrap.log" >&2
  die "debootstrap failed"
}
say "debootstrap done in $((SECONDS - start))s"

# apt sources inside the image: the same mirrors the host uses, so `apt-get install` in the
# Dockerfile reaches what the host reaches (nothing is hard-coded in the repo).
{
  echo "deb $mirror $suite main"
  echo "deb $mirror $suite-updates main"
  [ -n "$security_mirror" ] && echo "deb $security_mirror $suite-security main"
} >"$rootfs/etc/apt/sources.list"
# The same small-image apt settings Debian's official images carry.
cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
EOF
cat >"$rootfs/etc/apt/apt.conf.d/docker-no-recommends" <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
EOF
echo 'Acquire::Languages "none";' >"$rootfs/etc/apt/apt.conf.d/docker-no-languages"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/tmp/* "$rootfs"/var/log/*.log
for m in proc sys dev/pts dev; do umount -l "$rootfs/$m" 2>/dev/null || true; done

say "importing as $tag"
tar --numeric-owner -C "$rootfs" -c . |
  docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["bash"]' \
    --message "debootstrap --variant=minbase $suite" \
    - "$tag" >/dev/null
say "built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}')) in $((SECONDS - start))s"
