# Attach mode's delivery of execmcp-runner (its bytes on stdin), run as the exec user so the file
# is its own and cleanup can remove it: a directory of its own (mode 700) under /tmp, else under
# $HOME when /tmp is mounted noexec. The program run with no argument exits 2 (its usage): that
# proves it can execute there. Prints execmcp-at:<dir>. $1: a tag naming this server's directory.
tag=$1; t=/tmp/.execmcp-$tag; h=${HOME:-/nonexistent}/.execmcp-$tag
put() { mkdir -p "$1" 2>/dev/null && chmod 700 "$1" 2>/dev/null; }
ok() { "$1/execmcp-runner" 2>/dev/null; [ $? = 2 ]; }
src=
for d in "$t" "$h"; do
  if put "$d" && cat > "$d/execmcp-runner.new" && chmod 700 "$d/execmcp-runner.new" &&
     mv -f "$d/execmcp-runner.new" "$d/execmcp-runner"; then src=$d; break; fi
done
[ -n "$src" ] || { echo 'no writable directory (tried /tmp and $HOME)' >&2; exit 1; }
if ok "$src"; then echo "execmcp-at:$src"; exit 0; fi
if [ "$src" = "$t" ] && put "$h" && cp "$t/execmcp-runner" "$h/execmcp-runner" && ok "$h"; then
  rm -rf -- "$t"; echo "execmcp-at:$h"; exit 0; fi
rm -rf -- "$t" "$h" 2>/dev/null
echo 'no directory where a program may execute (/tmp and $HOME are noexec)' >&2; exit 1
