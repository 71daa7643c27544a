#!/bin/sh
# Starts a command as an unprivileged user that also gets the group owning a mounted Docker socket,
# so an image can use a socket whose group id differs from host to host without staying root.
#   drop-to-user.sh USER COMMAND [ARG...]
# Run as root (the image's default): COMMAND runs as USER with USER's groups, plus the socket's
# group when $EXECMCP_DOCKER_SOCKET (default /var/run/docker.sock) is a socket, with every
# capability dropped and no_new_privs set. Run as anyone else (docker run --user): COMMAND runs
# as is, and the socket group must come from `--group-add`.
set -eu

[ $# -ge 2 ] || { echo "usage: drop-to-user.sh USER COMMAND [ARG...]" >&2; exit 2; }
user="$1"
shift
[ "$(id -u)" = 0 ] || exec "$@"

uid="$(id -u "$user")"
gid="$(id -g "$user")"
groups="$(id -G "$user" | tr ' ' ',')"
socket="${EXECMCP_DOCKER_SOCKET:-/var/run/docker.sock}"
if [ -S "$socket" ]; then
  socket_gid="$(stat -c %g "$socket")"
  # Group 0 works but also opens whatever else is group-root readable: say so once.
  [ "$socket_gid" != 0 ] ||
    echo "drop-to-user: $socket belongs to group 0 (root); $user gets group 0 to use it" >&2
  groups="$groups,$socket_gid"
fi

# HOME follows the user: tools that write caches or history must not aim at /root.
HOME="$(getent passwd "$user" | cut -d: -f6)"
export HOME
exec setpriv --reuid="$uid" --regid="$gid" --groups="$groups" \
  --inh-caps=-all --bounding-set=-all --no-new-privs -- "$@"
