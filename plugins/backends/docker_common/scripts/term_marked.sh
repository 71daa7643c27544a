# A background process's grace: one SIGTERM to each process marked EXECMCP_CALL=$1, then up to
# $2 passes 0.1 s apart until none is left (the KILL sweep follows).
m="EXECMCP_CALL=$1"; n=$2; i=0
while :; do f=0
  for d in /proc/[0-9]*; do
    if grep -qxzF "$m" "$d/environ" 2>/dev/null; then f=1
      [ $i = 0 ] && kill -TERM "${d#/proc/}" 2>/dev/null; fi
  done
  [ $f = 0 ] && break; i=$((i+1)); [ $i -ge $n ] && break; sleep 0.1
done
