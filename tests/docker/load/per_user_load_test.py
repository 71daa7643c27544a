#!/usr/bin/env python3
"""Load test of a per-user agent: a sandbox per user, 100 users, one `execmcp serve --http`.

EXECMCP_PU_USERS users (default 100), each with their own bearer token, make 4 calls each
(write_file of a file named for the user, read_file and `cat` of it, `ls -A /workspace`) with
EXECMCP_PU_IN_FLIGHT users at a time (default 16) against one docker-api agent with `per_user:
{max_users: USERS, warm: 2, idle_stop: 3, idle_remove: 30}`. Checks that every call is answered
correctly, that each user sees only their own file and that on the host it is only in their
workspace, that one more user gets HTTP 429 (Retry-After, too_many_users) while the others hold
every slot, that idle_stop then stops every container and idle_remove removes them (only the warm
pool's are left), and that SIGTERM removes every container and warm directory and keeps every
workspace with its file. Prints the time and rate of the calls and the server's RSS.

idle_remove is 30 s, not a few: the one-user-too-many check needs all 100 sandboxes at once, and
on a 2-core machine the 100 first calls (each makes a container) take 15-20 s, so with idle_stop +
idle_remove shorter than that the first users' sandboxes are gone before the last user calls.

usage: per_user_load_test.py EXECMCP_BINARY   (plugins from $EXECMCP_PLUGIN_PATH)
env: EXECMCP_DOCKER_TESTS=0 skips (exit 77); EXECMCP_PU_USERS, EXECMCP_PU_IN_FLIGHT,
     EXECMCP_PU_WARM, EXECMCP_PU_IDLE_STOP, EXECMCP_PU_IDLE_REMOVE (seconds),
     EXECMCP_LOAD_IMAGE (default execmcp/runtime:latest).
"""

import hashlib
import http.client
import json
import os
import queue
import re
import secrets
import sys
import threading
import time

from mcp_http import (Client, Report, check_result, docker, engine_problem, proc_status_kib,
                      run_in_tempdir, start_server, stop_server)

AGENT = "py"
CALLS_PER_USER = 4

report = Report("per_user_load_test")
say, fail, failures = report.say, report.fail, report.failures


def env_number(name, default, kind=int):
    return kind(os.environ.get(name, default))


def metrics(client):
    """The per-user agent's sandbox gauges and counters from /metrics, by metric name."""
    status, text = client.get("/metrics")
    if status != 200:
        raise AssertionError(f"/metrics: HTTP {status}")
    out = {}
    pattern = re.compile(r'^(execmcp_sandbox\w*)\{agent="' + AGENT + r'"\} (\S+)$')
    for line in text.splitlines():
        m = pattern.match(line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def brief(m):
    keys = ("warm", "running", "stopped")
    events = ("claims", "creates", "starts", "stops", "removals", "refusals")
    return (" ".join(f"{k}={m.get('execmcp_sandboxes_' + k, 0):g}" for k in keys) + " | " +
            " ".join(f"{k}={m.get('execmcp_sandbox_' + k, 0):g}" for k in events))


def our_containers(server_pid):
    """(name, state) of every container the server made, from its owner label."""
    out = docker("ps", "-a", "--filter", f"label=execmcp.owner.pid={server_pid}",
                 "--format", "{{.Names}} {{.State}}")
    return [tuple(l.split(" ", 1)) for l in out.splitlines() if l.strip()]


class Users:
    """The users' tokens, their expected files and what their calls did."""

    def __init__(self, n):
        self.names = [f"u{i:03d}" for i in range(n)]
        self.tokens = {u: secrets.token_hex(32) for u in self.names}
        self.contents = {u: f"{u} wrote this {secrets.token_hex(8)}\n" for u in self.names}
        self.lock = threading.Lock()
        self.calls = 0
        self.first_ms = []  # a user's first call (claims or makes the sandbox)
        self.next_ms = []   # the user's later calls
        self.notices = {}   # notice text (first 60 chars) -> how many calls carried it
        self.errors = []
        self.called = 0  # users whose first call was answered: each has a sandbox record
        self.all_called = threading.Event()

    def error(self, msg):
        with self.lock:
            if len(self.errors) < 20:
                self.errors.append(msg)
            else:
                self.errors[-1] = f"... and more, last: {msg}"


def timed_call(client, users, tool, args, first):
    start = time.monotonic()
    rid, status, parsed = client.call(tool, args)
    ms = (time.monotonic() - start) * 1000
    if status != 200:
        raise AssertionError(f"{tool}: HTTP {status} {json.dumps(parsed)[:200]}")
    sc = check_result(parsed, rid, tool)
    with users.lock:
        users.calls += 1
        (users.first_ms if first else users.next_ms).append(ms)
        for notice in sc.get("notices", []):
            key = str(notice)[:60]
            users.notices[key] = users.notices.get(key, 0) + 1
    return sc


def user_calls(port, users, user):
    """The user's 4 calls, each checked."""
    path = f"{user}.txt"
    content = users.contents[user]
    client = Client(port, AGENT, users.tokens[user])
    try:
        try:
            timed_call(client, users, "write_file", {"path": path, "content": content}, True)
        finally:
            with users.lock:
                users.called += 1
                if users.called == len(users.names):
                    users.all_called.set()
        sc = timed_call(client, users, "read_file", {"path": path}, False)
        if sc.get("content") != content:
            raise AssertionError(f"read_file: read {sc.get('content')!r}, wrote {content!r}")
        sc = timed_call(client, users, "execute_command", {"command": f"cat {path}"}, False)
        if sc.get("exit_code") != 0 or sc.get("stdout") != content:
            raise AssertionError(f"cat: {json.dumps(sc)[:200]}")
        # Their own file and nothing else: no other user's file reaches this sandbox.
        sc = timed_call(client, users, "execute_command", {"command": "ls -A /workspace"}, False)
        if sc.get("exit_code") != 0 or sc.get("stdout") != path + "\n":
            raise AssertionError(f"ls -A /workspace: {json.dumps(sc)[:200]}")
    except (AssertionError, OSError, http.client.HTTPException) as e:
        users.error(f"{user}: {e}")
    finally:
        client.close()


def one_user_too_many(port, token_of_extra, before):
    """The next user while every slot is held: 429, Retry-After, too_many_users."""
    if before.get("execmcp_sandbox_removals_total", 0) > 0:
        return fail("a sandbox was already removed before every user had called (the calls took "
                    "longer than idle_stop + idle_remove): raise EXECMCP_PU_IDLE_REMOVE")
    client = Client(port, AGENT, token_of_extra)
    try:
        _, status, parsed = client.call("execute_command", {"command": "true"})
        retry = client.last_headers.get("retry-after")
    finally:
        client.close()
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if status != 429 or retry != "60" or error != "too_many_users":
        fail(f"one user too many: HTTP {status}, Retry-After {retry}, {parsed}")
    else:
        say(f"ok: one user too many gets HTTP 429, Retry-After {retry}: "
            f"{parsed.get('error_description', '')[:100]}")


def run_load(port, users, n_in_flight, extra_token, probe):
    """Every user's calls, n_in_flight users at a time; one more user once all have called."""
    todo = queue.Queue()
    load_over = threading.Event()
    for u in users.names:
        todo.put(u)

    def worker():
        while True:
            try:
                u = todo.get_nowait()
            except queue.Empty:
                return
            user_calls(port, users, u)

    def extra():
        # Once every user's first call was answered (each has a sandbox record), and before an
        # idle timer frees a slot: one user more.
        while not users.all_called.wait(0.1):
            if load_over.is_set():
                return fail("not every user's first call was answered: no check of one user "
                            "too many")
        one_user_too_many(port, extra_token, metrics(probe))

    start = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(n_in_flight)]
    checker = threading.Thread(target=extra)
    checker.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    load_over.set()
    checker.join()
    return elapsed


def check_workspaces(users_root, users, when):
    """Each user's file, only in their workspace; no other user's directory."""
    entries = sorted(e for e in os.listdir(users_root) if not e.startswith(".warm-"))
    if entries != sorted(users.names):
        extra = sorted(set(entries) - set(users.names))
        missing = sorted(set(users.names) - set(entries))
        fail(f"{when}: workspaces: {len(missing)} missing {missing[:3]}, "
             f"{len(extra)} unexpected {extra[:3]}")
    wrong = []
    for u in users.names:
        ws = os.path.join(users_root, u)
        try:
            files = os.listdir(ws)
            content = open(os.path.join(ws, f"{u}.txt")).read() if f"{u}.txt" in files else None
        except OSError as e:
            files, content = [str(e)], None
        if files != [f"{u}.txt"] or content != users.contents[u]:
            wrong.append(f"{u}: {files} {content!r}")
    if wrong:
        fail(f"{when}: {len(wrong)} workspaces do not hold just their user's file: {wrong[:3]}")
    else:
        say(f"ok ({when}): each of the {len(users.names)} workspaces holds only its user's file")


def wait_for(what, deadline_s, probe, done):
    """Polls /metrics until done(m) or deadline_s; returns (m, seconds waited)."""
    start = time.monotonic()
    m = metrics(probe)
    while not done(m) and time.monotonic() - start < deadline_s:
        time.sleep(0.5)
        m = metrics(probe)
    waited = time.monotonic() - start
    if not done(m):
        fail(f"{what}: not after {waited:.0f} s: {brief(m)}")
    return m, waited


def write_config(path, users_root, users, extra_name, extra_token, opts, image):
    with open(path, "w") as f:
        f.write("execmcp: 1\nagents:\n")
        f.write(f"  - id: {AGENT}\n"
                f"    per_user: {{workspace_root: \"{users_root}\", max_users: {opts['users']}, "
                f"idle_stop: {opts['idle_stop']}, idle_remove: {opts['idle_remove']}, "
                f"warm: {opts['warm']}}}\n"
                f"    backend: {{plugin: docker-api, settings: {{image: \"{image}\", "
                f"memory: 256m, network: none}}}}\n"
                f"    filters: [{{plugin: sanitize}}]\n    timeout: 60\n")
        f.write("server:\n  tokens:\n")
        for name, token in [*users.tokens.items(), (extra_name, extra_token)]:
            digest = hashlib.sha256(token.encode()).hexdigest()
            f.write(f"    - {{name: {name}, sha256: {digest}, agents: [{AGENT}]}}\n")


def idle_phases(server, probe, opts):
    """idle_stop stops every user's container, idle_remove removes it; the pool stays."""
    n = opts["users"]
    slack = 60 + n * 0.5
    most_stopped = [0]

    def all_stopped(m):
        most_stopped[0] = max(most_stopped[0], m.get("execmcp_sandboxes_stopped", 0))
        return m.get("execmcp_sandbox_stops_total", 0) >= n and m.get("execmcp_sandboxes_running", 0) == 0

    m, waited = wait_for("every sandbox stopped", opts["idle_stop"] + slack, probe, all_stopped)
    exited = sum(1 for _, state in our_containers(server.pid) if state == "exited")
    say(f"every user's sandbox stopped {waited:.1f} s after the calls (at most {most_stopped[0]:g} "
        f"stopped at once; {exited} containers exited, the rest already removed): {brief(m)}")
    m, waited = wait_for("every sandbox removed", opts["idle_remove"] + slack, probe,
                         lambda m: m.get("execmcp_sandbox_removals_total", 0) >= n and
                         m.get("execmcp_sandboxes_stopped", 0) == 0 and
                         m.get("execmcp_sandboxes_running", 0) == 0)
    say(f"every user's sandbox removed {waited:.1f} s later: {brief(m)}")
    left = our_containers(server.pid)
    warm_names = [name for name, state in left if "-w-" in name and state == "running"]
    if len(warm_names) != len(left) or len(left) > opts["warm"]:
        fail(f"after idle_remove, containers other than the running warm pool: {left[:6]}")
    else:
        say(f"ok: only the warm pool's {len(left)} containers are left: {sorted(warm_names)}")


def shut_down(server, users_root, users):
    code, took = stop_server(server, 120, report)
    if code != 0:
        fail(f"the server exited {code} after SIGTERM")
    say(f"SIGTERM -> exit {code} in {took:.1f} s")
    left = our_containers(server.pid)
    if left:
        fail(f"{len(left)} containers left after SIGTERM: {left[:4]}")
    warm_dirs = [e for e in os.listdir(users_root) if e.startswith(".warm-")]
    if warm_dirs:
        fail(f"warm directories left after SIGTERM: {warm_dirs}")
    if not left and not warm_dirs:
        say("ok: no container and no warm directory left after SIGTERM")
    check_workspaces(users_root, users, "after SIGTERM")


def run(binary, opts, image, root):
    users = Users(opts["users"])
    extra_name, extra_token = f"u{opts['users']:03d}", secrets.token_hex(32)
    users_root = os.path.join(root, "users")
    os.makedirs(users_root)
    config = os.path.join(root, "config.yaml")
    write_config(config, users_root, users, extra_name, extra_token, opts, image)
    log_path = os.path.join(root, "server.log")
    server, log, port = start_server(binary, config, log_path, "--max-concurrent", "32",
                                     "--max-queued-calls", str(opts["users"] + 16))
    try:
        if port is None:
            return fail("the server did not log its port:\n" + open(log_path).read()[-3000:])
        probe = Client(port, AGENT, extra_token)  # /metrics needs a token; it makes no sandbox
        m, waited = wait_for("the warm pool", 120, probe,
                             lambda m: m.get("execmcp_sandboxes_warm", 0) >= opts["warm"])
        say(f"server pid {server.pid} on port {port}; warm pool of {opts['warm']} ready after "
            f"{waited:.1f} s; RSS {proc_status_kib(server.pid, 'VmRSS') / 1024:.1f} MiB")

        elapsed = run_load(port, users, opts["in_flight"], extra_token, probe)
        n_calls = opts["users"] * CALLS_PER_USER
        hwm, rss = proc_status_kib(server.pid, "VmHWM"), proc_status_kib(server.pid, "VmRSS")
        for e in users.errors:
            fail(e)
        if users.calls != n_calls:
            fail(f"{users.calls} of {n_calls} calls answered correctly")
        first, later = sorted(users.first_ms), sorted(users.next_ms)
        say(f"calls: {users.calls}/{n_calls} correct in {elapsed:.1f} s "
            f"({users.calls / elapsed:.1f} calls/s), {opts['users']} users, "
            f"{opts['in_flight']} in flight")
        if first and later:
            say(f"latency ms: first call p50 {first[len(first) // 2]:.0f} max {first[-1]:.0f}; "
                f"later calls p50 {later[len(later) // 2]:.0f} max {later[-1]:.0f}")
        say(f"notices: {users.notices or 'none'}")
        say(f"memory after the calls: VmHWM {hwm / 1024:.1f} MiB, VmRSS {rss / 1024:.1f} MiB")
        say(f"metrics after the calls: {brief(metrics(probe))}")
        check_workspaces(users_root, users, "after the calls")

        t_idle = time.monotonic()
        idle_phases(server, probe, opts)
        probe.close()
        hwm, rss = proc_status_kib(server.pid, "VmHWM"), proc_status_kib(server.pid, "VmRSS")
        say(f"memory after the idle phases ({time.monotonic() - t_idle:.1f} s): "
            f"VmHWM {hwm / 1024:.1f} MiB, VmRSS {rss / 1024:.1f} MiB")
        shut_down(server, users_root, users)
        log.flush()
        bad = [l for l in open(log_path).read().splitlines()
               if re.search(r"\b(error|critical|warn(ing)?)\b", l, re.I)]
        if bad:
            say(f"note: {len(bad)} error/warning lines in the server log, first: {bad[0][:300]}")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        left = [name for name, _ in our_containers(server.pid)]
        if left:
            docker("rm", "-f", *left, check=False)
        log.close()


def main():
    image = os.environ.get("EXECMCP_LOAD_IMAGE", "execmcp/runtime:latest")
    problem = engine_problem(image)
    if problem:
        say(problem[1])
        return problem[0]
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    opts = {
        "users": env_number("EXECMCP_PU_USERS", 100),
        "in_flight": env_number("EXECMCP_PU_IN_FLIGHT", 16),
        "warm": env_number("EXECMCP_PU_WARM", 2),
        "idle_stop": env_number("EXECMCP_PU_IDLE_STOP", 3),
        "idle_remove": env_number("EXECMCP_PU_IDLE_REMOVE", 30),
    }
    return run_in_tempdir(report, "execmcp-peruser-",
                          lambda root: run(sys.argv[1], opts, image, root))


if __name__ == "__main__":
    sys.exit(main())
