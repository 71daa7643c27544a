// `execmcp serve --massgen … --execution-mode docker --agent-id A --instance-id I` as MassGen runs
// it, driven by the official MCP SDK client: the container is created beforehand the way MassGen
// creates it (`docker run -d --name massgen-A-I -v ws:ws -u 1000 … sleep infinity`); commands run in
// it, and it is still running after the server exits (execmcp does not own its lifecycle).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { bg } from '../lib/background.mjs';
import {
  EXECMCP_BIN,
  callTool,
  dockerAvailable,
  killMarker,
  makeWorkspace,
  processesWith,
  serverEnv,
  textOf,
  uniqueMarker,
  waitMarkerGone,
  waitUntil,
} from '../lib/harness.mjs';

const IMAGE = process.env.EXECMCP_DOCKER_IMAGE || 'execmcp/runtime:latest';
const available = dockerAvailable(IMAGE);

function docker(...args) {
  return spawnSync('docker', args, { encoding: 'utf8', timeout: 60000 });
}

// The command lines of execmcp-runner processes in the container ("" when none).
function runnersIn(container) {
  const list = "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done | grep '[e]xecmcp-runner' || true";
  return docker('exec', container, 'sh', '-c', list).stdout.trim();
}

function containerRunning(name) {
  return docker('inspect', '-f', '{{.State.Running}}', name).stdout.trim() === 'true';
}

describe('serve --massgen --execution-mode docker attaches to MassGen\'s container', { skip: available.ok ? false : available.why }, () => {
  const agentId = `e2emg${process.pid}`;
  const instanceId = `i${Date.now().toString(36)}`;
  const container = `massgen-${agentId}-${instanceId}`;
  const m = uniqueMarker();
  let w;
  let containerId = '';
  let transport;
  let client;
  let stderrText = '';

  before(async () => {
    w = makeWorkspace();
    // MassGen's workspace belongs to the container's user.
    fs.chownSync(w.ws, 1000, 1000);
    docker('rm', '-f', container);
    const run = docker('run', '-d', '--name', container, '-v', `${w.ws}:${w.ws}`, '-w', w.ws, '-u', '1000:1000', IMAGE, 'sleep', 'infinity');
    assert.equal(run.status, 0, `docker run: ${run.stderr}`);
    containerId = run.stdout.trim();
    transport = new StdioClientTransport({
      command: EXECMCP_BIN,
      args: ['serve', '--massgen', '--allowed-paths', w.ws, '--execution-mode', 'docker', '--agent-id', agentId, '--instance-id', instanceId],
      cwd: w.ws,
      env: serverEnv(),
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (d) => {
      stderrText = (stderrText + d.toString()).slice(-100000);
    });
    client = new Client({ name: 'execmcp-e2e-massgen', version: '1.0.0' }, { capabilities: {} });
    try {
      await client.connect(transport);
    } catch (err) {
      err.message += `\n--- execmcp stderr ---\n${stderrText}`;
      throw err;
    }
    await client.listTools();
  });

  after(async () => {
    await client?.close().catch(() => {});
    docker('rm', '-f', container);
    killMarker(m);
    w?.cleanup();
  });

  test('execute_command runs in that container, as its user, in the workspace', async () => {
    const r = await callTool(client, 'execute_command', { command: 'cat /etc/hostname; id -u; pwd; echo made-inside > made.txt' });
    assert.notEqual(r.isError, true, `${textOf(r)}\n${stderrText}`);
    const [hostname, uid, pwd] = r.structuredContent.stdout.trim().split('\n');
    assert.ok(containerId.startsWith(hostname) && hostname.length >= 12, `hostname ${hostname} is container ${containerId}`);
    assert.equal(uid, '1000');
    assert.equal(pwd, w.ws);
    assert.equal(r.structuredContent.work_dir, w.ws);
    assert.equal(fs.readFileSync(path.join(w.ws, 'made.txt'), 'utf8'), 'made-inside\n');
    const rd = await callTool(client, 'read_file', { path: 'made.txt' });
    assert.equal(rd.structuredContent.content, 'made-inside\n');
    assert.notEqual(runnersIn(container), '', 'the calls go through execmcp-runner in the container (agent mode)');
  });

  test('a background shell runs in that container too', async () => {
    const s = await bg(client, 'start_background_shell', { command: `cat /etc/hostname; sleep 1000.${m}` });
    assert.equal(s.success, true, JSON.stringify(s));
    const out = await waitUntil(async () => {
      const o = await bg(client, 'get_background_shell_output', { shell_id: s.shell_id });
      return o.stdout !== '' && o;
    }, { timeoutMs: 20000, stepMs: 100 });
    assert.ok(containerId.startsWith(out.stdout.trim()), `${out.stdout} is container ${containerId}`);
    assert.ok(processesWith(m).length >= 1, 'the sleep runs (seen from the host: same kernel)');
    // Left running on purpose: the server's exit must end it, not the container's.
  });

  test('after the server exits the container is still running, and only its shells ended', async () => {
    const pid = transport.pid;
    assert.ok(pid > 0);
    await client.close();
    client = undefined;
    const gone = await waitUntil(() => !fs.existsSync(`/proc/${pid}`) || fs.readFileSync(`/proc/${pid}/stat`, 'latin1').includes(') Z'), { timeoutMs: 20000 });
    assert.ok(gone, `execmcp (pid ${pid}) exited`);
    assert.equal(containerRunning(container), true, `${container} is still running: ${docker('ps', '-a', '--filter', `name=${container}`).stdout}`);
    assert.deepEqual(await waitMarkerGone(m, 20000), [], 'the background shell ended with the agent');
    // The container is as MassGen left it: it still runs commands, and execmcp-runner (started in it
    // for the server's calls) is gone with the server.
    const again = docker('exec', container, 'sh', '-c', 'echo still-here');
    assert.equal(again.stdout, 'still-here\n');
    assert.equal(await waitUntil(() => runnersIn(container) === '' && 'none', { timeoutMs: 20000, stepMs: 200 }) || runnersIn(container), 'none', 'no execmcp-runner is left in the container');
  });
});
