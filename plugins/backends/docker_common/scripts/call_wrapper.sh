# exec mode's wrapper around every command: $1 shell, $2 command, $3 call marker.
# Only the command carries the marker in its environment; when it exits, the wrapper kills whatever
# it left behind (background jobs, setsid escapees, fork-bomb children) so nothing outlives the
# call, like the local backend. The command leads its own process group, so one kill reaches the
# whole group at once (the kernel makes a group kill atomic against fork, which a pid-by-pid sweep
# is not). One grep per pass keeps the common case cheap; grep also reads the marker from stdin, so
# its output proves it ran: under an exhausted pids limit its fork fails, and silence must not read
# as "nothing left" (GNU and busybox grep both name stdin "(standard input)"). If forks keep failing
# (a fork bomb holds every pid) it says execmcp-sweep-incomplete on stderr and the backend finishes
# the job from outside. Killed processes hold their pids until init reaps them: the last loop
# waits, reading /proc/*/stat with the `read` builtin (no forks), so the next call is not refused
# by the pids limit.
# (Leading comment lines are dropped when the script is embedded; embed_scripts.cmake.)
sh_=$1; cmd_=$2; mark=$3
EXECMCP_CALL="$mark" setsid "$sh_" -c "$cmd_" &
pid=$!
wait $pid
rc=$?
kill -9 -$pid 2>/dev/null
read -r l 2>/dev/null < /proc/$$/stat; r=${l##*) }; set -- $r; own=$3
i=0; quiet=0; all=
while [ $i -lt 200 ] && [ $quiet -lt 2 ]; do
  i=$((i+1))
  p=$(grep -lzsF "EXECMCP_CALL=$mark" - /proc/[0-9]*/environ <<E
EXECMCP_CALL=$mark
E
)
  case "$p" in *"(standard input)"*) ;; *) continue ;; esac
  k=; g=
  for f in $p; do case "$f" in /proc/*) f=${f#/proc/}; q=${f%/environ}; k="$k $q"
    if read -r l 2>/dev/null < /proc/$q/stat; then r=${l##*) }; set -- $r
      [ "$3" != "$own" ] && g="$g -$3"; fi ;; esac; done
  if [ -z "$k" ]; then quiet=$((quiet+1)); else quiet=0; kill -9 $g $k 2>/dev/null; all="$all $k"; fi
done
[ $quiet -ge 2 ] || echo execmcp-sweep-incomplete >&2
n=0
while [ -n "$all" ] && [ $n -lt 3000 ]; do
  z=0
  for s in /proc/[0-9]*/stat; do
    read -r l 2>/dev/null < "$s" || continue
    case "$l" in *") Z "*) z=1; break ;; esac
  done
  [ $z = 0 ] && break
  n=$((n+1))
done
exit $rc
