#!/bin/sh
# Starts Squid with the configuration the execmcp backend rendered for one agent, given in
# $EXECMCP_EGRESS_CONF (squid.conf text) and $EXECMCP_EGRESS_ERROR_PAGE (the refusal page's
# template). Both are written to /tmp/execmcp-egress (a tmpfs when the root filesystem is
# read-only), where the rendered config expects them, so the image needs no writable layer.
#   execmcp-egress           run Squid in the foreground (as PID 1), logs on stdout and stderr
#   execmcp-egress --check   only parse the configuration (squid -k parse) and exit with its status
set -eu

dir=/tmp/execmcp-egress
[ -n "${EXECMCP_EGRESS_CONF:-}" ] || {
  echo "execmcp-egress: EXECMCP_EGRESS_CONF is empty; the backend passes the rendered squid.conf" >&2
  exit 2
}
case "${1:-}" in
  --check | "") ;;
  *)
    echo "usage: execmcp-egress [--check]" >&2
    exit 2
    ;;
esac
umask 077
mkdir "$dir"
printf '%s\n' "$EXECMCP_EGRESS_CONF" >"$dir/squid.conf"
printf '%s\n' "${EXECMCP_EGRESS_ERROR_PAGE:-%H is not in the egress allow list of this agent.}" \
  >"$dir/ERR_EXECMCP_EGRESS_DENIED"
chmod 0500 "$dir"
chmod 0400 "$dir/squid.conf" "$dir/ERR_EXECMCP_EGRESS_DENIED"
# The policy does not change while the proxy runs: Squid has no use for the variables.
unset EXECMCP_EGRESS_CONF EXECMCP_EGRESS_ERROR_PAGE

if [ "${1:-}" = --check ]; then
  status=0
  squid -k parse -f "$dir/squid.conf" || status=$?
  chmod 0700 "$dir"
  rm -rf "$dir"
  exit "$status"
fi
exec squid -N -f "$dir/squid.conf"
