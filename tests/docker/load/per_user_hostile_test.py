#!/usr/bin/env python3
"""Hostile users of one shared server (issue 28): nobody reaches or starves another's sandbox.

One `execmcp serve --http` with the default limits serves two per-user agents, one on docker-api
(EXECMCP_PH_USERS users, default 20) and one on docker-cli (the six users whose token names collide
under the naming before round 4 of the hardening), each with a warm pool of 2 and `network: egress`.
The agents' ids are 60 characters long, so that under the old naming (cut at 128 characters) two
keys that share their first 50 characters shared one container. The token names are chosen to
collide under that naming too: `warm-1` and `warm-2` (the warm containers' old names), `carol` and
`carol-egress` (carol's proxy's old name), two 63-character keys that share 50 characters.

1. In order: alice and bob claim the warm containers, then the colliding users, whose workspaces
   exist (returning users), get containers made under the names their keys give; every user writes
   a file of their own and learns the id of the container that serves them.
2. The flooder (`carol-egress`) holds 140 long calls at once (more than the shared workers and queue
   of 64 + 64) and, in one of them, sends about 20 s of requests the egress policy refuses, to 40
   hosts; meanwhile every other user makes 3 rounds of calls. Every one of them must succeed.
3. Every user reads their file back in a container with the same id as in step 1, the host has it in
   their workspace only, and each container's labels name its agent and its own instance.
4. The audit trail holds at most EXECMCP_PH_MAX_EGRESS_RECORDS egress records of the flooder's
   sandbox (default 120: the follower's per-hour budget plus its summaries), for thousands refused.
5. SIGTERM: the server exits 0 and leaves no container, network or warm directory behind.

usage: per_user_hostile_test.py EXECMCP_BINARY   (plugins from $EXECMCP_PLUGIN_PATH)
env: EXECMCP_DOCKER_TESTS=0 skips (exit 77); EXECMCP_PH_USERS; EXECMCP_PH_FLOOD_SECONDS (20);
     EXECMCP_PH_MAX_EGRESS_RECORDS; EXECMCP_PH_UPSTREAM (egress.upstream_network; default: the
     engine's default bridge); EXECMCP_LOAD_IMAGE (default execmcp/runtime:latest).
"""

import hashlib
import http.client
import json
import os
import re
import secrets
import subprocess
import sys
import threading
import time

from mcp_http import (Client, Report, check_result, docker, engine_problem, run_in_tempdir,
                      start_server, stop_server)

API = "api-" + "x" * 56
CLI = "cli-" + "x" * 56
HOLDERS = 140  # more than the default workers and queue (64 + 64)

report = Report("per_user_hostile_test")
say, fail, failures = report.say, report.fail, report.failures

LONG_A = "k" * 50 + "-first-key-01"
LONG_B = "k" * 50 + "-other-key-45"
COLLIDING = ["alice", "bob", "warm-1", "warm-2", "carol", "carol-egress", LONG_A, LONG_B]
# Returning users (a workspace from before): each gets a container made for them, never a warm
# one, under the name their key gives; under the old naming, the names of alice's and bob's warm
# containers, of carol's proxy, and of each other.
RETURNING = ["warm-1", "warm-2", "carol", "carol-egress", LONG_A, LONG_B]
FLOODER = "carol-egress"


def network_room():
    """How many more networks the engine can make from its address pools (each egress sandbox
    has one): Docker's defaults (/16s and /20s) hold 31 in all."""
    pools = json.loads(docker("info", "--format", "{{json .DefaultAddressPools}}") or "null")
    if pools:
        room = 0
        for pool in pools:
            prefix = int(pool["Base"].split("/")[1])
            room += 2 ** max(0, int(pool["Size"]) - prefix)
    else:
        room = 31
    used = [n for n in docker("network", "ls", "--format", "{{.Name}}").split()
            if n not in ("bridge", "host", "none")]
    return room - len(used)


def user_names(n):
    names = list(COLLIDING)
    i = 0
    while len(names) < n:
        names.append(f"user{i:02d}")
        i += 1
    return names


def owned_objects(server_pid):
    """Containers and networks the server made, from its owner label."""
    label = f"label=execmcp.owner.pid={server_pid}"
    out = docker("ps", "-a", "--filter", label, "--format", "{{.Names}}")
    nets = docker("network", "ls", "--filter", label, "--format", "{{.Name}}")
    return [l for l in out.splitlines() + nets.splitlines() if l.strip()]


class Run:
    def __init__(self, port, tokens, contents):
        self.port = port
        self.tokens = tokens
        self.contents = contents
        self.lock = threading.Lock()
        self.errors = []
        self.calls = 0

    def error(self, msg):
        with self.lock:
            self.errors.append(msg[:400])

    def call(self, client, tool, args):
        rid, status, parsed = client.call(tool, args)
        if status != 200:
            raise AssertionError(f"{tool}: HTTP {status} {json.dumps(parsed)[:200]}")
        sc = check_result(parsed, rid, tool)
        with self.lock:
            self.calls += 1
        return sc

    def container_of(self, agent, user, write):
        """Writes (or checks) the user's file; returns the id of the container that served it."""
        client = Client(self.port, agent, self.tokens[user])
        try:
            if write:
                self.call(client, "write_file", {"path": "owner.txt", "content": self.contents[user]})
            sc = self.call(client, "execute_command", {"command": "cat /workspace/owner.txt; hostname"})
            lines = sc.get("stdout", "").splitlines()
            if sc.get("exit_code") != 0 or len(lines) != 2 or lines[0] + "\n" != self.contents[user]:
                raise AssertionError(f"cat owner.txt; hostname: {json.dumps(sc)[:300]}")
            return lines[1]
        finally:
            client.close()


def write_config(path, root, tokens, cli_users, image):
    upstream = os.environ.get("EXECMCP_PH_UPSTREAM")
    upstream = f", upstream_network: {upstream}" if upstream else ""

    def agent(agent_id, plugin):
        return (f"  - id: {agent_id}\n"
                f"    per_user: {{workspace_root: \"{root}/{plugin}\", max_users: 24, "
                f"idle_stop: 600, idle_remove: 1200, warm: 2}}\n"
                f"    backend: {{plugin: {plugin}, settings: {{image: \"{image}\", memory: 256m, "
                f"network: egress, egress: {{allow: [allowed.test]{upstream}}}}}}}\n"
                f"    filters: [{{plugin: sanitize}}]\n    timeout: 120\n")

    with open(path, "w") as f:
        f.write(f"execmcp: 1\naudit_file: {root}/audit.jsonl\nagents:\n")
        f.write(agent(API, "docker-api"))
        f.write(agent(CLI, "docker-cli"))
        f.write("server:\n  tokens:\n")
        for name, token in tokens.items():
            digest = hashlib.sha256(token.encode()).hexdigest()
            agents = f"[{API}, {CLI}]" if name in cli_users else f"[{API}]"
            f.write(f"    - {{name: \"{name}\", sha256: {digest}, agents: {agents}}}\n")


def wait_warm(port, token, agent, want):
    client = Client(port, agent, token)
    pattern = re.compile(r'^execmcp_sandboxes_warm\{agent="' + agent + r'"\} (\S+)$', re.M)
    start = time.monotonic()
    try:
        while time.monotonic() - start < 180:
            status, text = client.get("/metrics")
            m = pattern.search(text) if status == 200 else None
            if m and float(m.group(1)) >= want:
                return time.monotonic() - start
            time.sleep(0.5)
    finally:
        client.close()
    return None


def hold_and_flood(run, flood_seconds, results):
    """The flooder's calls: HOLDERS long ones at once, one of them the flood."""
    token = run.tokens[FLOODER]
    statuses = {}
    lock = threading.Lock()
    flood = ("end=$(($(date +%%s) + %d)); i=0; while [ \"$(date +%%s)\" -lt \"$end\" ]; do "
             "curl -s -o /dev/null --max-time 2 http://h$((i %% 40)).denied.test/; i=$((i+1)); "
             "done; echo $i" % flood_seconds)

    def one(i):
        client = Client(run.port, API, token)
        client.conn.timeout = 180
        try:
            command = flood if i == 0 else f"sleep {flood_seconds + 5}"
            _, status, parsed = client.call("execute_command", {"command": command})
            if i == 0 and status == 200:
                results["flood"] = (parsed or {}).get("result", {}).get("structuredContent", {})
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
        except (OSError, http.client.HTTPException) as e:
            with lock:
                statuses[type(e).__name__] = statuses.get(type(e).__name__, 0) + 1
        finally:
            client.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(HOLDERS)]
    for i, t in enumerate(threads):
        t.start()
        time.sleep(0.5 if i == 0 else 0.005)  # the flood first, within the user's bound
    for t in threads:
        t.join()
    results["statuses"] = statuses


def others_call(run, users, rounds):
    def one(user):
        client = Client(run.port, API, run.tokens[user])
        try:
            for r in range(rounds):
                sc = run.call(client, "execute_command", {"command": f"echo {r}; cat owner.txt"})
                if sc.get("stdout") != f"{r}\n" + run.contents[user]:
                    raise AssertionError(f"round {r}: {json.dumps(sc)[:200]}")
                sc = run.call(client, "read_file", {"path": "owner.txt"})
                if sc.get("content") != run.contents[user]:
                    raise AssertionError(f"read_file: {json.dumps(sc)[:200]}")
                time.sleep(1)
        except (AssertionError, OSError, http.client.HTTPException) as e:
            run.error(f"{user} during the flood: {e}")
        finally:
            client.close()

    threads = [threading.Thread(target=one, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def check_labels(agent, served):
    """Each container serving a user is this agent's, with an instance of its own."""
    instances = {}
    for user, cid in served.items():
        out = docker("inspect", "-f", "{{json .Config.Labels}}", cid, check=False)
        labels = json.loads(out) if out.strip() else {}
        if labels.get("execmcp.agent") != agent or labels.get("execmcp.role", "agent") != "agent":
            fail(f"{agent[:3]}: {user}'s container {cid} has labels {labels}")
        instances.setdefault(labels.get("execmcp.instance"), []).append(user)
    shared = {i: u for i, u in instances.items() if len(u) > 1}
    if shared:
        fail(f"{agent[:3]}: users share an instance: {shared}")


def audit_egress(path):
    by_user = {}
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if record.get("tool") == "egress":
                key = (record.get("agent", "")[:3], record.get("user"))
                by_user[key] = by_user.get(key, 0) + 1
    return by_user


def run_test(binary, image, root, n_users, flood_seconds, max_egress):
    names = user_names(n_users)
    tokens = {u: secrets.token_hex(32) for u in names}
    tokens["probe"] = secrets.token_hex(32)
    contents = {u: f"{u} owns this {secrets.token_hex(8)}\n" for u in names}
    cli_users = {"alice", "warm-1", "carol", "carol-egress", LONG_A, LONG_B}
    config = os.path.join(root, "config.yaml")
    write_config(config, root, tokens, cli_users | {"probe"}, image)
    for plugin in ("docker-api", "docker-cli"):
        for user in RETURNING:
            os.makedirs(os.path.join(root, plugin, user), mode=0o700)
    log_path = os.path.join(root, "server.log")
    server, log, port = start_server(binary, config, log_path)  # the default limits
    try:
        if port is None:
            return fail("the server did not log its port:\n" + open(log_path).read()[-3000:])
        for agent in (API, CLI):
            waited = wait_warm(port, tokens["probe"], agent, 2)
            if waited is None:
                return fail(f"{agent[:3]}: no warm pool of 2 after 180 s")
            say(f"{agent[:3]}: warm pool of 2 ready after {waited:.1f} s")
        run = Run(port, tokens, contents)
        served = {API: {}, CLI: {}}
        t0 = time.monotonic()
        # 1. In order: the warm containers' claimants first, then the users named to collide.
        for agent in (API, CLI):
            order = [u for u in names if agent == API or u in cli_users]
            for user in order:
                try:
                    served[agent][user] = run.container_of(agent, user, write=True)
                except (AssertionError, OSError, http.client.HTTPException) as e:
                    fail(f"{agent[:3]}: {user}'s first calls: {e}")
        say(f"step 1: {sum(len(s) for s in served.values())} sandboxes made and written in "
            f"{time.monotonic() - t0:.1f} s")
        for agent in (API, CLI):
            ids = list(served[agent].values())
            if len(set(ids)) != len(ids):
                fail(f"{agent[:3]}: two users share a container: {served[agent]}")
        # 2. The flooder holds more calls than the shared pool; everyone else calls meanwhile.
        results = {}
        flooder = threading.Thread(target=hold_and_flood, args=(run, flood_seconds, results))
        t1 = time.monotonic()
        flooder.start()
        time.sleep(3)
        others_call(run, [u for u in names if u != FLOODER], 3)
        flooder.join()
        for e in run.errors:
            fail(e)
        statuses = results.get("statuses", {})
        flood = results.get("flood", {})
        say(f"step 2 ({time.monotonic() - t1:.1f} s): the flooder's {HOLDERS} calls got {statuses}; "
            f"its flood sent {flood.get('stdout', '?').strip()} refused requests; "
            f"{len(names) - 1} other users made {3 * 2} calls each, errors: {len(run.errors)}")
        if statuses.get(200, 0) < 1 or statuses.get(429, 0) < 1:
            fail(f"the flooder's calls were not bounded per user: {statuses}")
        # 3. Same containers, own files, own labels.
        before = len(failures)
        for agent in (API, CLI):
            for user, cid in served[agent].items():
                try:
                    now = run.container_of(agent, user, write=False)
                except (AssertionError, OSError, http.client.HTTPException) as e:
                    fail(f"{agent[:3]}: {user} after the flood: {e}")
                    continue
                if now != cid:
                    fail(f"{agent[:3]}: {user} was served by {cid}, now by {now}")
                workspace = os.path.join(root, "docker-api" if agent == API else "docker-cli", user)
                with open(os.path.join(workspace, "owner.txt")) as f:
                    if f.read() != contents[user]:
                        fail(f"{agent[:3]}: {user}'s workspace holds another file")
            check_labels(agent, served[agent])
        if len(failures) == before:
            say("step 3: every user kept their container and their file")
        # 4. The audit trail's egress records of the flooder: bounded.
        time.sleep(2)  # the follower's last lines
        egress = audit_egress(os.path.join(root, "audit.jsonl"))
        mine = egress.get((API[:3], FLOODER), 0)
        size = os.path.getsize(os.path.join(root, "audit.jsonl"))
        say(f"step 4: egress records in the audit trail: {egress}; audit trail {size} bytes")
        if mine == 0 or mine > max_egress:
            fail(f"the flooder's sandbox wrote {mine} egress records (want 1 to {max_egress})")
        # 5. SIGTERM.
        code, took = stop_server(server, 180, report)
        left = owned_objects(server.pid)
        warm = [e for d in ("docker-api", "docker-cli") for e in os.listdir(os.path.join(root, d))
                if e.startswith(".warm-")]
        say(f"step 5: SIGTERM -> exit {code} in {took:.1f} s; left: "
            f"{left[:4] or 'nothing'}, warm directories: {warm or 'none'}")
        if code != 0 or left or warm:
            fail("SIGTERM left something behind or failed")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        left = owned_objects(server.pid)
        for name in left:
            docker("rm", "-f", name, check=False)
            docker("network", "rm", name, check=False)
        log.close()


def main():
    image = os.environ.get("EXECMCP_LOAD_IMAGE", "execmcp/runtime:latest")
    problem = engine_problem(image)
    if problem:
        say(problem[1])
        return problem[0]
    if subprocess.run(["docker", "image", "inspect", "execmcp/egress:latest"],
                      capture_output=True).returncode:
        say("FAIL: image execmcp/egress:latest is missing; build it with docker/build.sh --egress")
        return 1
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    n_users = int(os.environ.get("EXECMCP_PH_USERS", 20))
    needed = n_users + 6 + 8  # the users' sandboxes, the warm pools and their refills
    room = network_room()
    if room < needed:
        say(f"SKIPPED: the engine's address pools have room for {room} more networks, and this "
            f"test makes up to {needed} (one per egress sandbox): start the engine with "
            "scripts/docker-engine.sh, or give it default-address-pools (docs/deployment.md)")
        return 77
    return run_in_tempdir(report, "execmcp-hostile-", lambda root: run_test(
        sys.argv[1], image, root, n_users, int(os.environ.get("EXECMCP_PH_FLOOD_SECONDS", 20)),
        int(os.environ.get("EXECMCP_PH_MAX_EGRESS_RECORDS", 120))))


if __name__ == "__main__":
    sys.exit(main())
