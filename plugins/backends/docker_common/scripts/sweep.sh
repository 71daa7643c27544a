# The kill sweep where python3 is missing: kill -9 every process marked EXECMCP_CALL=$1 until a
# pass finds none (then prints execmcp-swept), at most 50 passes.
m="EXECMCP_CALL=$1"; i=0; while [ $i -lt 50 ]; do f=0; for d in /proc/[0-9]*; do if grep -qxzF "$m" "$d/environ" 2>/dev/null; then kill -9 "${d#/proc/}" 2>/dev/null; f=1; fi; done; [ $f = 0 ] && echo execmcp-swept && break; i=$((i+1)); done
