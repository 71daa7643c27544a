"""What the load tests share: MCP 2026-07-28 stateless requests over keep-alive HTTP, the engine check.

Used by http_load_test.py (many agents) and per_user_load_test.py (a sandbox per user).
"""

import http.client
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

SKIP = 77
PROTOCOL = "2026-07-28"


class Report:
    """What a load test says: progress lines under its name, and the failures it counts."""

    def __init__(self, name):
        self.name = name
        self.failures = []

    def say(self, msg):
        print(f"{self.name}: {msg}", flush=True)

    def fail(self, msg):
        self.failures.append(msg)
        self.say(f"FAIL: {msg}")


def start_server(binary, config, log_path, *extra_args):
    """`execmcp serve --http 127.0.0.1:0` with the config and extra arguments, its stderr into
    log_path: (process, the open log, its port, or None when it logged none within 120 s)."""
    log = open(log_path, "w")
    server = subprocess.Popen(
        [binary, "serve", "--config", config, "--http", "127.0.0.1:0", *extra_args],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    start = time.monotonic()
    while time.monotonic() - start < 120 and server.poll() is None:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(log_path).read())
        if m:
            return server, log, int(m.group(1))
        time.sleep(0.05)
    return server, log, None


def stop_server(server, timeout, report):
    """SIGTERM, then its exit code within `timeout` seconds (killed and reported failed when it
    takes longer) and how long it took."""
    t_stop = time.monotonic()
    server.send_signal(signal.SIGTERM)
    try:
        code = server.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        server.kill()
        code = server.wait()
        report.fail(f"the server did not exit within {timeout} s of SIGTERM")
    return code, time.monotonic() - t_stop


def run_in_tempdir(report, prefix, body):
    """body(root) in a fresh directory (mode 0755: containers reach their workspaces through it),
    removed unless something failed; then the total time and the verdict: the exit code."""
    t_start = time.monotonic()
    root = tempfile.mkdtemp(prefix=prefix)
    os.chmod(root, 0o755)
    try:
        body(root)
    finally:
        if report.failures:
            report.say(f"server log and workspaces kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    report.say(f"total {time.monotonic() - t_start:.1f} s")
    if report.failures:
        report.say(f"{len(report.failures)} failures")
        return 1
    report.say("all checks passed")
    return 0


def docker(*args, check=True):
    out = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=60)
    if check and out.returncode != 0:
        raise RuntimeError(f"docker {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def engine_problem(image):
    """Why the Docker tests cannot run here (an exit code and a message), or None when they can.

    EXECMCP_DOCKER_TESTS=0 skips; a missing engine or image fails, as every Docker test does."""
    if os.environ.get("EXECMCP_DOCKER_TESTS", "1") == "0":
        return SKIP, "SKIPPED: EXECMCP_DOCKER_TESTS=0"
    if shutil.which("docker") is None or subprocess.run(
            ["docker", "version"], capture_output=True).returncode != 0:
        return 1, ("FAIL: the Docker engine is not reachable; start it with "
                   "scripts/docker-engine.sh start (or set EXECMCP_DOCKER_TESTS=0 to skip)")
    if subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode:
        return 1, f"FAIL: image {image} is missing; build it with docker/build.sh"
    return None


def proc_counts(pid):
    """(open fds, threads) of a process, from /proc."""
    return len(os.listdir(f"/proc/{pid}/fd")), len(os.listdir(f"/proc/{pid}/task"))


def proc_status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Client:
    """One keep-alive HTTP/1.1 connection to one agent, sending stateless MCP requests."""

    ids = itertools.count(1)
    ids_lock = threading.Lock()

    def __init__(self, port, agent, token):
        self.port = port
        self.agent = agent
        self.token = token
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.last_headers = {}  # the last response's headers, lower-case names

    @classmethod
    def next_id(cls):
        with cls.ids_lock:
            return next(cls.ids)

    def call(self, tool, arguments, token=None, agent=None):
        """Returns (id sent, HTTP status, parsed JSON body or None)."""
        rid = self.next_id()
        body = json.dumps({
            "jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {
                "name": tool, "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        })
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
            "Mcp-Method": "tools/call",
            "Mcp-Name": tool,
            "Authorization": f"Bearer {token or self.token}",
        }
        self.conn.request("POST", f"/mcp/{agent or self.agent}", body=body, headers=headers)
        resp = self.conn.getresponse()
        raw = resp.read().decode("utf-8", "replace")
        self.last_headers = {k.lower(): v for k, v in resp.getheaders()}
        if resp.getheader("connection", "").lower() == "close":
            self.conn.close()
        if "text/event-stream" in resp.getheader("content-type", ""):
            data = [l[5:].strip() for l in raw.splitlines() if l.startswith("data:")]
            raw = data[-1] if data else ""
        try:
            parsed = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            parsed = None
        return rid, resp.status, parsed

    def get(self, path):
        """GET path with this client's token: (HTTP status, body text)."""
        self.conn.request("GET", path, headers={"Authorization": f"Bearer {self.token}"})
        resp = self.conn.getresponse()
        raw = resp.read().decode("utf-8", "replace")
        if resp.getheader("connection", "").lower() == "close":
            self.conn.close()
        return resp.status, raw

    def close(self):
        self.conn.close()


def check_result(parsed, rid, what):
    """The result object of a successful tools/call, or raises with what went wrong."""
    if not isinstance(parsed, dict):
        raise AssertionError(f"{what}: no JSON-RPC response")
    if parsed.get("id") != rid:
        raise AssertionError(f"{what}: answer has id {parsed.get('id')}, sent {rid}")
    result = parsed.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        raise AssertionError(f"{what}: {json.dumps(parsed)[:300]}")
    return result.get("structuredContent") or {}
