// The docker-api backend through the official MCP SDK client: commands run as the image's
// non-root user in the agent's container, and files round-trip between tools and commands.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import {
  callTool,
  connectClient,
  dockerAvailable,
  killMarker,
  makeWorkspace,
  nativeConfig,
  textOf,
  uniqueMarker,
  waitForMarker,
  waitMarkerGone,
} from '../lib/harness.mjs';

const IMAGE = process.env.EXECMCP_DOCKER_IMAGE || 'execmcp/runtime:latest';
const available = dockerAvailable(IMAGE);
// ctest runs this file through run.mjs, which turns "unavailable" into a visible skip (exit 77).
const skip = available.ok ? false : available.why;

describe('docker-api agent', { skip }, () => {
  let w;
  let conn;
  const agent = `e2e${process.pid}`;
  const markers = [];

  before(async () => {
    w = makeWorkspace();
    const config = nativeConfig(w, {
      agent,
      filters: 'none',
      backend: `    backend: {plugin: docker-api, settings: {image: ${JSON.stringify(IMAGE)}}}\n`,
    });
    conn = await connectClient(config, { agent });
  });

  after(async () => {
    await conn?.close();
    // The server removes its container on shutdown; make sure, so a failure leaves no orphan.
    const ids = spawnSync('docker', ['ps', '-aq', '--filter', `name=${agent}`], { encoding: 'utf8' }).stdout.trim();
    if (ids) spawnSync('docker', ['rm', '-f', ...ids.split(/\s+/)]);
    for (const m of markers) killMarker(m);
    w?.cleanup();
  });

  test('id -u is the non-root image user', async () => {
    const r = await callTool(conn.client, 'execute_command', { command: 'id -u' });
    assert.notEqual(r.isError, true, textOf(r));
    assert.equal(r.structuredContent.stdout.trim(), '1000');
    assert.equal(r.structuredContent.exit_code, 0);
  });

  test('the workspace is mounted at the same path', async () => {
    const r = await callTool(conn.client, 'execute_command', { command: 'pwd' });
    assert.equal(r.structuredContent.stdout.trim(), w.ws);
  });

  test('file round trip: write_file -> command -> read_file', async () => {
    const wr = await callTool(conn.client, 'write_file', { path: 'in.txt', content: 'from the client\n' });
    assert.notEqual(wr.isError, true, textOf(wr));
    const r = await callTool(conn.client, 'execute_command', { command: 'tr a-z A-Z < in.txt > out.txt && cat out.txt' });
    assert.notEqual(r.isError, true, textOf(r));
    assert.equal(r.structuredContent.stdout, 'FROM THE CLIENT\n');
    const rd = await callTool(conn.client, 'read_file', { path: 'out.txt' });
    assert.equal(rd.structuredContent.content, 'FROM THE CLIENT\n');
    assert.equal(fs.readFileSync(path.join(w.ws, 'out.txt'), 'utf8'), 'FROM THE CLIENT\n');
  });

  test('non-zero exit and stderr', async () => {
    const r = await callTool(conn.client, 'execute_command', { command: 'echo oops 1>&2; exit 4' });
    assert.equal(r.structuredContent.exit_code, 4);
    assert.equal(r.structuredContent.stderr, 'oops\n');
  });

  // The container shares the host kernel, so its processes show in the host's /proc.
  test('timeout kills the whole tree in the container', async () => {
    const marker = uniqueMarker();
    markers.push(marker);
    const r = await callTool(conn.client, 'execute_command', {
      command: `sh -c 'sleep 1000.${marker} & sleep 1000.${marker}; wait'`,
      timeout: 2,
    });
    assert.equal(r.structuredContent.timed_out, true, JSON.stringify(r));
    assert.deepEqual(await waitMarkerGone(marker, 10000), [], 'no process of the tree survives');
  });

  test('cancel kills the whole tree in the container', async () => {
    const marker = uniqueMarker();
    markers.push(marker);
    const controller = new AbortController();
    const call = callTool(
      conn.client,
      'execute_command',
      { command: `sh -c 'sleep 1000.${marker} & sleep 1000.${marker}; wait'`, timeout: 600 },
      { signal: controller.signal },
    );
    const seen = await waitForMarker(marker, 20000);
    assert.ok(seen.length >= 2, `the tree is running: ${JSON.stringify(seen)}`);
    controller.abort('test cancels');
    await assert.rejects(call);
    assert.deepEqual(await waitMarkerGone(marker, 10000), [], 'cancel kills every process of the tree');
    const r = await callTool(conn.client, 'execute_command', { command: 'echo still-here' });
    assert.equal(r.structuredContent.stdout, 'still-here\n');
  });

  // The default tools dir (<cwd>/tools) is inside the workspace: used in place, never mounted on
  // its own (a mount's source must not be something the agent can replace with a symlink).
  test('read_docstring finds a module in the default tools dir, and /tools is not mounted', async () => {
    fs.writeFileSync(path.join(w.tools, 'mathhelp.py'), 'def add(a, b):\n    """Add two numbers."""\n    return a + b\n');
    const r = await callTool(conn.client, 'read_docstring', { module: 'mathhelp', function: 'add' });
    assert.notEqual(r.isError, true, textOf(r));
    assert.match(r.structuredContent.docstring, /Add two numbers\./);
    const m = await callTool(conn.client, 'execute_command', { command: "grep -c ' /tools ' /proc/self/mountinfo || true" });
    assert.equal(m.structuredContent.stdout.trim(), '0');
  });
});
