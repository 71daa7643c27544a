#!/usr/bin/env python3
"""Load test of the shared server: many docker-api agents, many HTTP clients, one `serve --http`.

16 agents x 4 keep-alive clients each send MCP 2026-07-28 stateless requests (echo, write_file,
read_file, cat) for EXECMCP_LOAD_SECONDS (default 60) against one `execmcp serve --http
127.0.0.1:0`, each agent's clients with their own bearer token. Checks that every call is answered
exactly once and correctly, that the only HTTP errors are the deliberate ones (a wrong token: 401,
another agent's token: 403), that the server's fd and thread counts do not grow between the start
and the end of the load, that a client closing its connection mid-call gets its command killed in
the container while the server keeps serving, and that after SIGTERM the server exits 0 and leaves
no container behind. Prints calls, calls/s, RSS (VmHWM), fds and threads.

usage: http_load_test.py EXECMCP_BINARY   (plugins from $EXECMCP_PLUGIN_PATH)
env: EXECMCP_DOCKER_TESTS=0 skips (exit 77); EXECMCP_LOAD_SECONDS, EXECMCP_LOAD_AGENTS,
     EXECMCP_LOAD_CLIENTS (per agent), EXECMCP_LOAD_IMAGE (default execmcp/runtime:latest),
     EXECMCP_TEST_EXEC_MODE (agent or exec: the docker-api exec_mode; unset: the default).
"""

import hashlib
import http.client
import json
import os
import re
import secrets
import shutil
import socket
import sys
import tempfile
import threading
import time

from mcp_http import (PROTOCOL, Client, Report, check_result, docker, engine_problem, proc_counts,
                      proc_status_kib, start_server, stop_server)

# Growth allowed between the start and the end of the load: calls in flight at the moment of a
# sample hold a few fds (exec streams) and threads each, so the two samples are maxima over
# windows, and only growth beyond this margin is a leak.
FD_MARGIN = 16
THREAD_MARGIN = 8

report = Report("http_load_test")
say, fail, failures = report.say, report.fail, report.failures


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.sent = set()
        self.answered = {}  # id -> times answered
        self.calls = 0
        self.deliberate = 0
        self.errors = []  # unexpected ones (kept short)

    def answer(self, rid, got_id):
        with self.lock:
            self.sent.add(rid)
            if got_id is not None:
                self.answered[got_id] = self.answered.get(got_id, 0) + 1

    def error(self, msg):
        with self.lock:
            if len(self.errors) < 20:
                self.errors.append(msg)
            else:
                self.errors[-1] = f"... and more, last: {msg}"


def client_loop(port, agent, token, other, cidx, deadline, tally):
    client = Client(port, agent, token)
    step = 0
    try:
        while time.monotonic() < deadline:
            step += 1
            kind = step % 4
            path = f"c{cidx}_{step % 3}.txt"
            content = f"{agent} client {cidx} step {step} {secrets.token_hex(4)}\n"
            try:
                if kind == 0:
                    word = secrets.token_hex(6)
                    rid, status, parsed = client.call("execute_command",
                                                      {"command": f"echo {word}"})
                    tally.answer(rid, parsed.get("id") if isinstance(parsed, dict) else None)
                    if status != 200:
                        raise AssertionError(f"echo: HTTP {status}")
                    sc = check_result(parsed, rid, "echo")
                    if sc.get("exit_code") != 0 or sc.get("stdout") != word + "\n":
                        raise AssertionError(f"echo: {json.dumps(sc)[:200]}")
                else:
                    # write_file, then read it back through the tool and through `cat`.
                    rid, status, parsed = client.call("write_file",
                                                      {"path": path, "content": content})
                    tally.answer(rid, parsed.get("id") if isinstance(parsed, dict) else None)
                    if status != 200:
                        raise AssertionError(f"write_file: HTTP {status}")
                    check_result(parsed, rid, "write_file")
                    tool, args = (("read_file", {"path": path}) if kind != 3 else
                                  ("execute_command", {"command": f"cat {path}"}))
                    rid, status, parsed = client.call(tool, args)
                    tally.answer(rid, parsed.get("id") if isinstance(parsed, dict) else None)
                    if status != 200:
                        raise AssertionError(f"{tool}: HTTP {status}")
                    sc = check_result(parsed, rid, tool)
                    got = sc.get("content") if tool == "read_file" else sc.get("stdout")
                    if got != content:
                        raise AssertionError(f"{tool}: read {got!r}, wrote {content!r}")
                    with tally.lock:
                        tally.calls += 1
                with tally.lock:
                    tally.calls += 1
                # Now and then, deliberate refusals: a wrong token (401) and another agent's
                # token (403). They must not disturb this connection's next call.
                if step % 50 == 2 and other != agent:
                    rid, status, _ = client.call("execute_command", {"command": "true"},
                                                 token="wrong-" + secrets.token_hex(8))
                    if status != 401:
                        raise AssertionError(f"a wrong token got HTTP {status}, want 401")
                    rid, status, _ = client.call("execute_command", {"command": "true"},
                                                 agent=other)
                    if status != 403:
                        raise AssertionError(f"another agent's token got HTTP {status}, want 403")
                    with tally.lock:
                        tally.deliberate += 2
            except (AssertionError, OSError, http.client.HTTPException) as e:
                tally.error(f"{agent}/c{cidx}: {e}")
                client.close()
                client = Client(port, agent, token)
    finally:
        client.close()


def container_of(agent):
    ids = docker("ps", "-q", "--filter", "label=execmcp.managed=true",
                 "--filter", f"label=execmcp.agent={agent}").split()
    return ids[0] if ids else None


def sleeps_in(container):
    out = docker("top", container, "-eo", "pid,args", check=False)
    return [l for l in out.splitlines() if "sleep 30" in l]


def disconnect_mid_call(port, agent, token):
    """A client that closes its socket 1 s into `sleep 30`: the command must die, the server live."""
    container = container_of(agent)
    if not container:
        return fail(f"no running container for {agent}")
    body = json.dumps({
        "jsonrpc": "2.0", "id": 999999, "method": "tools/call",
        "params": {"name": "execute_command", "arguments": {"command": "sleep 30"},
                   "_meta": {"io.modelcontextprotocol/protocolVersion": PROTOCOL,
                             "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    request = (f"POST /mcp/{agent} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
               f"MCP-Protocol-Version: {PROTOCOL}\r\nMcp-Method: tools/call\r\n"
               f"Mcp-Name: execute_command\r\nAuthorization: Bearer {token}\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(request)
    started = time.monotonic()
    seen = False
    while time.monotonic() - started < 5 and not seen:
        seen = bool(sleeps_in(container))
        time.sleep(0.1)
    if not seen:
        sock.close()
        return fail("`sleep 30` never showed in `docker top` of the agent's container")
    time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
    sock.close()
    closed = time.monotonic()
    while time.monotonic() - closed < 5 and sleeps_in(container):
        time.sleep(0.1)
    left = sleeps_in(container)
    if left:
        fail(f"`sleep 30` still runs 5 s after its client disconnected: {left}")
    else:
        say(f"ok: disconnect mid-call killed `sleep 30` within "
            f"{time.monotonic() - closed:.1f} s")
    client = Client(port, agent, token)
    try:
        rid, status, parsed = client.call("execute_command", {"command": "echo still-serving"})
        sc = check_result(parsed, rid, "after disconnect") if status == 200 else {}
        if sc.get("stdout") != "still-serving\n":
            fail(f"the server did not serve after the disconnect: HTTP {status} {parsed}")
        else:
            say("ok: the server serves after the disconnect")
    finally:
        client.close()


def main():
    image = os.environ.get("EXECMCP_LOAD_IMAGE", "execmcp/runtime:latest")
    problem = engine_problem(image)
    if problem:
        say(problem[1])
        return problem[0]
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = sys.argv[1]
    seconds = float(os.environ.get("EXECMCP_LOAD_SECONDS", "60"))
    n_agents = int(os.environ.get("EXECMCP_LOAD_AGENTS", "16"))
    n_clients = int(os.environ.get("EXECMCP_LOAD_CLIENTS", "4"))

    # The backend's exec_mode, as in the other Docker tests (unset: the default, agent).
    mode = os.environ.get("EXECMCP_TEST_EXEC_MODE", "")
    if mode not in ("", "agent", "exec"):
        say(f"FAIL: EXECMCP_TEST_EXEC_MODE must be agent or exec (got '{mode}')")
        return 1
    exec_mode = f", exec_mode: {mode}" if mode else ""

    tag = f"load{os.getpid()}"
    agents = [f"{tag}a{i:02d}" for i in range(n_agents)]
    tokens = {a: secrets.token_hex(32) for a in agents}
    root = tempfile.mkdtemp(prefix="execmcp-load-")
    os.chmod(root, 0o755)  # the containers reach their workspaces through it
    config = os.path.join(root, "config.yaml")
    with open(config, "w") as f:
        f.write("execmcp: 1\nagents:\n")
        for a in agents:
            ws = os.path.join(root, a)
            os.makedirs(ws)
            os.chmod(ws, 0o777)  # the container's user writes here
            f.write(f"  - id: {a}\n    cwd: \"{ws}\"\n"
                    f"    backend: {{plugin: docker-api, settings: {{image: \"{image}\", "
                    f"network: none{exec_mode}}}}}\n    filters: []\n    timeout: 60\n")
        f.write("server:\n  tokens:\n")
        for i, a in enumerate(agents):
            digest = hashlib.sha256(tokens[a].encode()).hexdigest()
            f.write(f"    - name: group{i:02d}\n      sha256: {digest}\n      agents: [{a}]\n")

    log_path = os.path.join(root, "server.log")
    total_clients = n_agents * n_clients
    t_start = time.monotonic()
    server, log, port = start_server(binary, config, log_path, "--max-concurrent", "32",
                                     "--max-queued-calls", str(total_clients + 16))
    try:
        if port is None:
            say("FAIL: the server did not log its port:\n" + open(log_path).read()[-3000:])
            return 1
        say(f"server pid {server.pid} on port {port} after {time.monotonic() - t_start:.1f} s")

        # Warm-up: one call per agent, all at once; each agent's container starts on it.
        warm_errors = []

        def warm(a):
            c = Client(port, a, tokens[a])
            try:
                rid, status, parsed = c.call("execute_command", {"command": "true"})
                if status != 200:
                    warm_errors.append(f"{a}: HTTP {status} {parsed}")
            except (OSError, http.client.HTTPException) as e:
                warm_errors.append(f"{a}: {e}")
            finally:
                c.close()

        warmers = [threading.Thread(target=warm, args=(a,)) for a in agents]
        for t in warmers:
            t.start()
        for t in warmers:
            t.join()
        if warm_errors:
            say(f"FAIL: warm-up: {warm_errors[:3]}")
            return 1
        say(f"{n_agents} containers started in {time.monotonic() - t_start:.1f} s")
        idle_fds, idle_threads = proc_counts(server.pid)
        say(f"after warm-up: {idle_fds} fds, {idle_threads} threads, "
            f"RSS {proc_status_kib(server.pid, 'VmRSS') / 1024:.1f} MiB")

        tally = Tally()
        samples = []  # (seconds into the load, fds, threads)
        stop_sampling = threading.Event()
        load_start = time.monotonic()
        deadline = load_start + seconds

        def sample():
            while not stop_sampling.is_set():
                try:
                    fds, threads = proc_counts(server.pid)
                    samples.append((time.monotonic() - load_start, fds, threads))
                except OSError:
                    pass
                stop_sampling.wait(0.5)

        sampler = threading.Thread(target=sample)
        sampler.start()
        workers = []
        for i, a in enumerate(agents):
            other = agents[(i + 1) % len(agents)]
            for c in range(n_clients):
                t = threading.Thread(target=client_loop,
                                     args=(port, a, tokens[a], other, c, deadline, tally))
                t.start()
                workers.append(t)
        for t in workers:
            t.join()
        elapsed = time.monotonic() - load_start
        stop_sampling.set()
        sampler.join()

        # Every call answered exactly once, with its own id; no unexpected errors.
        missing = tally.sent - set(tally.answered)
        doubled = {k: v for k, v in tally.answered.items() if v != 1}
        foreign = set(tally.answered) - tally.sent
        if missing or doubled or foreign:
            fail(f"ids: {len(missing)} unanswered, {len(doubled)} answered more than once, "
                 f"{len(foreign)} answers to ids never sent")
        for e in tally.errors:
            fail(e)
        if tally.calls == 0:
            fail("no call completed")

        # fds and threads: the maxima over the first and the last fifth of the load.
        window = max(elapsed / 5, 2.0)
        first = [s for s in samples if s[0] <= window]
        last = [s for s in samples if s[0] >= elapsed - window]
        fd_start, fd_end = max(s[1] for s in first), max(s[1] for s in last)
        th_start, th_end = max(s[2] for s in first), max(s[2] for s in last)
        fd_peak, th_peak = max(s[1] for s in samples), max(s[2] for s in samples)
        if fd_end > fd_start + FD_MARGIN:
            fail(f"open fds grew from {fd_start} to {fd_end} during the load")
        if th_end > th_start + THREAD_MARGIN:
            fail(f"threads grew from {th_start} to {th_end} during the load")

        disconnect_mid_call(port, agents[0], tokens[agents[0]])
        after_fds, after_threads = proc_counts(server.pid)
        hwm = proc_status_kib(server.pid, "VmHWM")
        rss = proc_status_kib(server.pid, "VmRSS")

        say(f"load: {n_agents} agents x {n_clients} clients, {elapsed:.1f} s: {tally.calls} calls "
            f"({tally.calls / elapsed:.1f}/s), {len(tally.sent)} requests, {tally.deliberate} "
            f"deliberate refusals (401/403), {len(tally.errors)} unexpected errors")
        say(f"fds: {idle_fds} idle, {fd_start} -> {fd_end} start -> end of load (peak {fd_peak}), "
            f"{after_fds} after")
        say(f"threads: {idle_threads} idle, {th_start} -> {th_end} start -> end of load "
            f"(peak {th_peak}), {after_threads} after")
        say(f"memory: VmHWM {hwm / 1024:.1f} MiB, VmRSS {rss / 1024:.1f} MiB after the load")

        # SIGTERM: exit 0, and no container of this server's agents left behind.
        code, took = stop_server(server, 60, report)
        if code != 0:
            fail(f"the server exited {code} after SIGTERM")
        say(f"SIGTERM -> exit {code} in {took:.1f} s")
        leaked = [a for a in agents if docker("ps", "-aq", "--filter", "label=execmcp.managed=true",
                                              "--filter", f"label=execmcp.agent={a}").strip()]
        if leaked:
            fail(f"containers left behind for {len(leaked)} agents: {leaked[:4]}")
        else:
            say(f"ok: no container left for the {n_agents} agents")
        log.flush()
        text = open(log_path).read()
        bad = [l for l in text.splitlines() if re.search(r"\b(error|critical)\b", l, re.I)]
        if bad:
            say(f"note: {len(bad)} error lines in the server log, first: {bad[0][:300]}")
        say(f"total {time.monotonic() - t_start:.1f} s")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        for a in agents:
            ids = docker("ps", "-aq", "--filter", f"label=execmcp.agent={a}", check=False).split()
            if ids:
                docker("rm", "-f", *ids, check=False)
        log.close()
        if failures:
            say(f"server log kept at {log_path}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    if failures:
        say(f"{len(failures)} failures")
        return 1
    say("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
