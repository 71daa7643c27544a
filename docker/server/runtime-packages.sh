#!/bin/sh
# Prints the Debian packages that own the shared libraries the ELF files under a directory link
# to, one a line, so the server image installs exactly those (the list cannot go stale).
#   runtime-packages.sh DIR
# Fails, naming the library, when one is missing or owned by no package (a library built by hand
# on this machine would be missing in the image).
set -eu
[ $# -eq 1 ] && [ -d "$1" ] || { echo "usage: runtime-packages.sh DIR" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
: >"$work/libs"
: >"$work/errors"

find "$1" -type f \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) -print >"$work/files"
while read -r f; do
  [ "$(head -c 4 "$f" | tail -c 3)" = ELF ] || continue
  ldd "$f" >"$work/ldd" 2>&1 || true
  awk -v f="$f" '/not found/ { print f " needs " $1 ", which is not found" }' "$work/ldd" >>"$work/errors"
  awk '/=> \// { print $3 }' "$work/ldd" >>"$work/libs"
done <"$work/files"

for lib in $(sort -u "$work/libs"); do
  # dpkg knows the path a package installed; Debian 12 merges /lib into /usr/lib, so try the path
  # as ldd printed it, with /usr in front, and resolved.
  pkg="$(dpkg -S "$lib" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null ||
    dpkg -S "$(readlink -f "$lib")" 2>/dev/null || true)"
  if [ -n "$pkg" ]; then
    printf '%s\n' "$pkg" | head -n 1 | cut -d: -f1 >>"$work/packages"
  else
    echo "no Debian package owns $lib" >>"$work/errors"
  fi
done

if [ -s "$work/errors" ]; then
  sed 's/^/runtime-packages: /' "$work/errors" >&2
  exit 1
fi
sort -u "$work/packages"
