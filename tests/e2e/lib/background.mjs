// The five background-shell tools through the official MCP SDK client, one suite shared by the
// backends that offer them (local here, docker-api under tests/e2e/docker/): a printing loop read
// incrementally with the cursor, a tree with a `setsid` escapee ended by kill, the running limit,
// and commands the agent's filters refuse.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import {
  callTool,
  connectClient,
  killMarker,
  makeWorkspace,
  nativeConfig,
  processesWith,
  randomName,
  textOf,
  uniqueMarker,
  waitUntil,
} from './harness.mjs';

export const BACKGROUND_TOOLS = [
  'get_background_shell_output',
  'get_background_shell_status',
  'kill_background_shell',
  'list_background_shells',
  'start_background_shell',
];

// The limit the suite's agent runs with (the default is MassGen's 10).
export const MAX_RUNNING = 2;

// Calls a background tool and returns its structuredContent, checking the text says the same.
export async function bg(client, name, args = {}) {
  const r = await callTool(client, name, args);
  const s = r.structuredContent;
  assert.ok(s && typeof s === 'object', `${name} has structuredContent: ${JSON.stringify(r)}`);
  assert.equal(r.isError === true, s.success === false, `${name}: isError matches success: ${JSON.stringify(r)}`);
  if (s.success === false) assert.equal(textOf(r), s.error, 'the text of a failure is its error');
  return s;
}

// The lines of one stream answer ("" is no line).
function linesOf(text) {
  return text === '' ? [] : text.split('\n');
}

// Kills every running shell of the agent, so each test starts below the limit.
async function killAllRunning(client) {
  const list = await bg(client, 'list_background_shells');
  for (const shell of list.shells) {
    if (shell.status === 'running') await bg(client, 'kill_background_shell', { shell_id: shell.shell_id });
  }
}

// `live(pid)`: whether the process with this pid (as the backend numbers it) is alive and not a
// zombie, asked where the processes run (the host for local, the container for docker).
// `conn`: the connection (for probes that run a command through it).
async function aliveHere(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

// Asks inside the agent's own environment (a container for docker) through execute_command.
export async function aliveThroughCommand(client, pid) {
  const r = await callTool(client, 'execute_command', {
    command: `if [ -r /proc/${pid}/status ] && ! grep -q '^State:[[:space:]]*Z' /proc/${pid}/status; then echo alive; else echo gone; fi`,
  });
  assert.notEqual(r.isError, true, textOf(r));
  const answer = r.structuredContent.stdout.trim();
  assert.ok(answer === 'alive' || answer === 'gone', `probe answered ${JSON.stringify(answer)}`);
  return answer === 'alive';
}

// options: name, backend (YAML lines of the agent's backend), agent, skip, inContainer (pids are
// the container's: probe them with execute_command), pidKnown (the backend reports the shell's pid;
// it may be null otherwise), cleanup(agent) after the server closed.
export function backgroundSuite({ name, backend, agent = 'default', skip = false, inContainer = false, pidKnown = true, cleanup }) {
  describe(`background shells: ${name}`, { skip }, () => {
    let w;
    let conn;
    const markers = [];
    const alive = (pid) => (inContainer ? aliveThroughCommand(conn.client, pid) : aliveHere(pid));
    const marker = () => {
      const m = uniqueMarker();
      markers.push(m);
      return m;
    };

    before(async () => {
      w = makeWorkspace();
      const config = nativeConfig(w, {
        agent,
        backend,
        extra: `    background: {max_running: ${MAX_RUNNING}, kill_grace: 2}\n`,
      });
      conn = await connectClient(config, { agent });
    });

    after(async () => {
      if (conn) await killAllRunning(conn.client).catch(() => {});
      await conn?.close();
      await cleanup?.(agent);
      for (const m of markers) killMarker(m);
      w?.cleanup();
    });

    test('the five tools are listed', async () => {
      const names = (await conn.client.listTools()).tools.map((t) => t.name);
      for (const tool of BACKGROUND_TOOLS) assert.ok(names.includes(tool), `${tool} in ${names}`);
    });

    if (inContainer && pidKnown) {
      // agent mode falls back to one exec per call when the runner cannot start: make sure it did not.
      test('the calls go through execmcp-runner in the container (agent mode)', async () => {
        const r = await callTool(conn.client, 'execute_command', {
          command: "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done | grep -c '[e]xecmcp-runner' || true",
        });
        assert.notEqual(r.isError, true, textOf(r));
        assert.ok(Number(r.structuredContent.stdout.trim()) >= 1, `runner processes: ${r.structuredContent.stdout}\n${conn.stderr()}`);
      });
    }

    test('a printing loop: running, read twice incrementally with the cursor', async () => {
      const m = marker();
      const command = `i=0; while :; do echo "line $i"; i=$((i+1)); sleep 0.05; done # ${m}`;
      const started = await bg(conn.client, 'start_background_shell', { command });
      assert.equal(started.success, true);
      assert.match(started.shell_id, /^shell_[0-9a-f]{8}$/);
      assert.equal(started.status, 'running');
      assert.equal(started.command, command);
      assert.equal(started.work_dir, w.ws);
      if (pidKnown) assert.ok(Number.isInteger(started.pid) && started.pid > 0, `pid ${started.pid}`);
      else assert.ok(started.pid === null || started.pid > 0, `pid ${started.pid}`);
      const id = started.shell_id;

      const status = await bg(conn.client, 'get_background_shell_status', { shell_id: id });
      assert.equal(status.status, 'running');
      assert.equal(status.exit_code, null);
      assert.equal(status.pid, started.pid);
      assert.equal(status.command, command);
      assert.equal(status.cwd, w.ws);
      assert.match(status.start_time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      assert.equal(typeof status.duration_seconds, 'number');

      // Without a cursor: everything kept (MassGen's answer), once there are a few lines.
      let first;
      await waitUntil(async () => {
        first = await bg(conn.client, 'get_background_shell_output', { shell_id: id });
        return linesOf(first.stdout).length >= 3;
      }, { timeoutMs: 20000, stepMs: 100 });
      let lines = linesOf(first.stdout);
      assert.ok(lines.length >= 3, `the loop printed: ${JSON.stringify(first)}`);
      assert.deepEqual(lines, lines.map((_, i) => `line ${i}`), 'from the first line, in order');
      assert.equal(first.status, 'running');
      assert.equal(first.exit_code, null);
      assert.equal(first.stderr, '');
      assert.equal(typeof first.next_cursor, 'string');
      let next = lines.length;  // the number of the line the next read must start with

      // Two reads with the cursor: each starts exactly after the previous one, nothing repeated
      // or skipped. A read that finds nothing new leaves the cursor where it was.
      let cursor = first.next_cursor;
      for (let read = 0; read < 2; ++read) {
        let answer;
        await waitUntil(async () => {
          answer = await bg(conn.client, 'get_background_shell_output', { shell_id: id, cursor });
          if (answer.stdout === '') assert.equal(answer.next_cursor, cursor, 'nothing read, cursor kept');
          return answer.stdout !== '';
        }, { timeoutMs: 20000, stepMs: 100 });
        lines = linesOf(answer.stdout);
        assert.ok(lines.length > 0, `read ${read + 2} got new lines: ${JSON.stringify(answer)}`);
        assert.deepEqual(lines, lines.map((_, i) => `line ${next + i}`), `read ${read + 2} starts at line ${next}`);
        assert.equal(answer.stdout_dropped_lines, 0);
        assert.notEqual(answer.next_cursor, cursor);
        next += lines.length;
        cursor = answer.next_cursor;
      }

      const list = await bg(conn.client, 'list_background_shells');
      const mine = list.shells.find((s) => s.shell_id === id);
      assert.ok(mine, `listed: ${JSON.stringify(list)}`);
      assert.equal(mine.status, 'running');
      assert.equal(list.count, list.shells.length);

      const killed = await bg(conn.client, 'kill_background_shell', { shell_id: id });
      assert.deepEqual(
        { success: killed.success, shell_id: killed.shell_id, status: killed.status, signal: killed.signal },
        { success: true, shell_id: id, status: 'killed', signal: 'SIGTERM' },
      );
      const after = await bg(conn.client, 'get_background_shell_status', { shell_id: id });
      assert.equal(after.status, 'killed');
      assert.equal(processesWith(m).length, 0, 'the loop is gone');
      // A second kill: MassGen's "already terminated" shape.
      const again = await bg(conn.client, 'kill_background_shell', { shell_id: id });
      assert.equal(again.success, true);
      assert.equal(again.status, 'killed');
      assert.equal(again.signal, null);
      assert.equal(again.message, 'Process already terminated');
    });

    test('kill ends the whole tree, a setsid escapee included', async () => {
      const m = marker();
      const pidFile = `escapee-${m}.pid`;
      const command = `setsid sleep 1000.${m} & echo $! > ${pidFile}; echo started; sleep 1000.${m}`;
      const started = await bg(conn.client, 'start_background_shell', { command });
      assert.equal(started.success, true, JSON.stringify(started));
      const id = started.shell_id;
      const pidPath = path.join(w.ws, pidFile);
      const pidText = await waitUntil(() => {
        const t = fs.existsSync(pidPath) ? fs.readFileSync(pidPath, 'utf8') : '';
        return t.endsWith('\n') && t;
      }, { timeoutMs: 20000 });
      assert.ok(pidText, 'the command wrote its escapee pid');
      const escapee = Number(pidText.trim());
      assert.ok(escapee > 0, pidText);
      assert.equal(await alive(escapee), true, 'the escapee runs before the kill');
      const seen = await waitUntil(() => processesWith(m).length >= 2 && processesWith(m), { timeoutMs: 20000 });
      assert.ok(seen && seen.length >= 2, `both sleeps run: ${JSON.stringify(seen)}`);

      const killed = await bg(conn.client, 'kill_background_shell', { shell_id: id });
      assert.equal(killed.success, true, JSON.stringify(killed));
      assert.equal(killed.status, 'killed');
      // kill returns once the tree is gone: no waiting here.
      assert.equal(await alive(escapee), false, `the escapee ${escapee} is gone`);
      assert.deepEqual(processesWith(m), [], 'no process of the tree survives');
      const status = await bg(conn.client, 'get_background_shell_status', { shell_id: id });
      assert.equal(status.status, 'killed');
      assert.equal(typeof status.exit_code, 'number');
      assert.ok(status.exit_code < 0, `a signal shows as -N: ${status.exit_code}`);
    });

    test('a shell that ends: exit 0 is stopped, exit 3 is failed, its output stays readable', async () => {
      await killAllRunning(conn.client);
      const ok = await bg(conn.client, 'start_background_shell', { command: 'echo out; echo err 1>&2; exit 0' });
      const bad = await bg(conn.client, 'start_background_shell', { command: 'exit 3' });
      assert.equal(ok.success && bad.success, true, JSON.stringify([ok, bad]));
      const ended = async (id) =>
        waitUntil(async () => {
          const s = await bg(conn.client, 'get_background_shell_status', { shell_id: id });
          return s.status !== 'running' && s;
        }, { timeoutMs: 20000, stepMs: 100 });
      const s1 = await ended(ok.shell_id);
      assert.equal(s1.status, 'stopped');
      assert.equal(s1.exit_code, 0);
      const s2 = await ended(bad.shell_id);
      assert.equal(s2.status, 'failed');
      assert.equal(s2.exit_code, 3);
      const out = await bg(conn.client, 'get_background_shell_output', { shell_id: ok.shell_id });
      assert.equal(out.stdout, 'out');
      assert.equal(out.stderr, 'err');
      assert.equal(out.status, 'stopped');
    });

    test(`at most ${MAX_RUNNING} running: the next start gets MassGen's error`, async () => {
      await killAllRunning(conn.client);
      const m = marker();
      const ids = [];
      for (let i = 0; i < MAX_RUNNING; ++i) {
        const s = await bg(conn.client, 'start_background_shell', { command: `sleep 1000.${m}` });
        assert.equal(s.success, true, JSON.stringify(s));
        ids.push(s.shell_id);
      }
      const name = randomName('over-limit');
      const over = await callTool(conn.client, 'start_background_shell', { command: `touch ${name}; sleep 1000.${m}` });
      assert.equal(over.isError, true, JSON.stringify(over));
      assert.deepEqual(over.structuredContent, {
        success: false,
        error: `Failed to start background shell: Maximum concurrent shells (${MAX_RUNNING}) reached`,
      });
      assert.equal(fs.existsSync(path.join(w.ws, name)), false, 'the refused command did not run');
      // The limit counts running shells: one killed makes room.
      await bg(conn.client, 'kill_background_shell', { shell_id: ids[0] });
      const room = await bg(conn.client, 'start_background_shell', { command: `sleep 1000.${m}` });
      assert.equal(room.success, true, JSON.stringify(room));
      await killAllRunning(conn.client);
      assert.deepEqual(processesWith(m), []);
    });

    test('a command the filters refuse is not started: sanitize (sudo) and patterns (^curl)', async () => {
      await killAllRunning(conn.client);
      const before = (await bg(conn.client, 'list_background_shells')).count;
      const sudo = await bg(conn.client, 'start_background_shell', { command: 'sudo true' });
      assert.equal(sudo.success, false);
      assert.match(sudo.error, /^Command validation error: /);
      assert.equal(sudo.blocked_by, 'sanitize');
      assert.ok(sudo.rule.length > 0);

      const name = randomName('curl-ran');
      const curl = await bg(conn.client, 'start_background_shell', { command: `curl http://127.0.0.1:9/ ; touch ${name}` });
      assert.equal(curl.success, false);
      assert.match(curl.error, /^Command validation error: /);
      assert.equal(curl.blocked_by, 'patterns');
      assert.match(curl.rule, /\^curl/);
      assert.equal(fs.existsSync(path.join(w.ws, name)), false, 'a refused command never runs');
      assert.equal((await bg(conn.client, 'list_background_shells')).count, before, 'nothing was added');
    });

    // The server keeps at most max_output_bytes (1 MiB by default) per stream of a shell; 100 MB
    // printed must not grow it by anything like that. VmHWM is the server's peak resident size.
    test('a shell printing 100 MB leaves the server\'s memory bounded, keeping the newest lines', async (t) => {
      await killAllRunning(conn.client);
      const peak = () => Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${conn.pid}/status`, 'latin1'))[1]) * 1024;
      const before = peak();
      const s = await bg(conn.client, 'start_background_shell', {
        command: "head -c 100000000 /dev/zero | tr '\\0' a | fold -w 999; echo; echo last-line",
      });
      assert.equal(s.success, true, JSON.stringify(s));
      const done = await waitUntil(async () => {
        const st = await bg(conn.client, 'get_background_shell_status', { shell_id: s.shell_id });
        return st.status !== 'running' && st;
      }, { timeoutMs: 120000, stepMs: 200 });
      assert.equal(done.status, 'stopped', JSON.stringify(done));
      const grown = peak() - before;
      t.diagnostic(`server peak RSS ${before} -> ${before + grown} bytes`);
      // Under AddressSanitizer (scripts/sanitize.sh sets ASAN_OPTIONS for the server it runs) freed
      // memory sits in ASan's quarantine, up to 256 MiB, so the peak says nothing about our bounds
      // there; the main pass measures them.
      if (process.env.ASAN_OPTIONS === undefined) {
        assert.ok(grown < 32 * 1024 * 1024, `the server grew by ${grown} bytes for 100 MB of output`);
      }
      const out = await bg(conn.client, 'get_background_shell_output', { shell_id: s.shell_id, max_lines: 2 });
      assert.match(out.stdout, /\nlast-line$/, 'the newest lines are kept');
    });

    test('an unknown shell id is MassGen\'s "Shell not found"', async () => {
      for (const tool of ['get_background_shell_status', 'get_background_shell_output', 'kill_background_shell']) {
        const s = await bg(conn.client, tool, { shell_id: 'shell_00000000' });
        assert.deepEqual(s, { success: false, error: 'Shell not found: shell_00000000' }, tool);
      }
    });
  });
}
