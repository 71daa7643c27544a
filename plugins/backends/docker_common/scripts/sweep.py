# The kill sweep in one python3 process (it still works when the pids limit leaves no room for
# `grep` forks): kills every process whose environment carries EXECMCP_CALL=<argv[1]>, repeating
# until a full pass finds none, so children forked during the sweep (a fork bomb) are caught too.
# The call's wrapper (marker in its argv, not its environment) is killed too: once this sweep runs,
# the wrapper's own clean-up is moot, and it must not outlive the call that returns after this.
# Prints execmcp-swept once no marked process is left.
import os, sys, time
mark = sys.argv[1].encode()
want = b"EXECMCP_CALL=" + mark
me = os.getpid()
for d in os.listdir("/proc"):
    if d.isdigit() and int(d) != me:
        try:
            with open("/proc/" + d + "/cmdline", "rb") as f:
                if mark in f.read().split(b"\0"):
                    os.kill(int(d), 9)
        except OSError:
            pass
end = time.time() + 10
quiet = 0
while time.time() < end and quiet < 3:
    found = 0
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open("/proc/" + d + "/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if want in env:
            found += 1
            try:
                # The whole group first: a group kill is atomic against fork.
                with open("/proc/" + d + "/stat", "rb") as f:
                    pgrp = int(f.read().rsplit(b")", 1)[1].split()[2])
                if pgrp != os.getpgrp():
                    os.killpg(pgrp, 9)
            except (OSError, ValueError, IndexError):
                pass
            try:
                os.kill(int(d), 9)
            except OSError:
                pass
    quiet = 0 if found else quiet + 1
    time.sleep(0.02)

def zombies():
    n = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/" + d + "/stat", "rb") as f:
                    n += b") Z " in f.read()
            except OSError:
                pass
    return n

# Killed processes hold their pids until init reaps them; wait so the pids limit frees.
while time.time() < end and zombies():
    time.sleep(0.01)
if quiet >= 3:
    print("execmcp-swept")
