// Time and process lifecycle through the SDK client: timeouts and cancels kill the whole process
// tree, requests run concurrently, output streams as progress, and the server leaves nothing
// behind on EOF or SIGTERM.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import {
  RawServer,
  callTool,
  connectClient,
  killMarker,
  makeWorkspace,
  nativeConfig,
  processesWith,
  sleep,
  textOf,
  uniqueMarker,
  waitForMarker,
  waitMarkerGone,
} from './lib/harness.mjs';

// `sh -c` running two sleeps, one in the background; both sleeps carry the marker in their argv.
function treeCommand(marker) {
  return `sh -c 'sleep 1000.${marker} & sleep 1000.${marker}; wait' tree-${marker}`;
}

describe('timeouts, concurrency, cancellation, progress', () => {
  let w;
  let conn;
  const markers = [];

  before(async () => {
    w = makeWorkspace();
    conn = await connectClient(nativeConfig(w));
  });

  after(async () => {
    await conn?.close();
    for (const m of markers) killMarker(m);
    w?.cleanup();
  });

  test('timeout kills the whole process tree', async () => {
    const marker = uniqueMarker();
    markers.push(marker);
    const started = Date.now();
    const r = await callTool(conn.client, 'execute_command', { command: treeCommand(marker), timeout: 1 });
    const elapsed = Date.now() - started;
    assert.notEqual(r.isError, true, textOf(r));
    assert.equal(r.structuredContent.timed_out, true);
    assert.equal(r.structuredContent.success, false);
    assert.ok(elapsed < 15000, `returned after ${elapsed} ms`);
    assert.deepEqual(await waitMarkerGone(marker, 5000), [], 'no process of the tree survives');
  });

  test('a long call does not block ping or another call', async () => {
    const slowStart = Date.now();
    let slowDoneAt = 0;
    const slow = callTool(conn.client, 'execute_command', { command: 'sleep 3; echo slow' }).then((r) => {
      slowDoneAt = Date.now();
      return r;
    });
    await sleep(300);
    const t0 = Date.now();
    await conn.client.ping();
    const fast = await callTool(conn.client, 'execute_command', { command: 'echo fast' });
    const fastDoneAt = Date.now();
    assert.equal(fast.structuredContent.stdout, 'fast\n');
    assert.equal(slowDoneAt, 0, 'the fast call finished while the slow one still ran');
    assert.ok(fastDoneAt - t0 < 2000, `ping + echo took ${fastDoneAt - t0} ms during sleep 3`);
    const slowResult = await slow;
    assert.equal(slowResult.structuredContent.stdout, 'slow\n');
    assert.ok(slowDoneAt - slowStart >= 2900, 'the slow call really slept');
  });

  test('AbortController cancels the call and kills the process tree', async () => {
    const marker = uniqueMarker();
    markers.push(marker);
    const controller = new AbortController();
    const call = callTool(conn.client, 'execute_command', { command: treeCommand(marker), timeout: 600 }, { signal: controller.signal });
    const seen = await waitForMarker(marker);
    assert.ok(seen.length >= 2, `the tree is running: ${JSON.stringify(seen)}`);
    controller.abort('test cancels');
    await assert.rejects(call);
    assert.deepEqual(await waitMarkerGone(marker, 5000), [], 'cancel kills every process of the tree');
    // The server is still healthy after a cancel.
    const r = await callTool(conn.client, 'execute_command', { command: 'echo after-cancel' });
    assert.equal(r.structuredContent.stdout, 'after-cancel\n');
  });

  test('progress notifications stream output while the command runs', async () => {
    const notes = [];
    const started = Date.now();
    const r = await callTool(
      conn.client,
      'execute_command',
      { command: 'for i in 1 2 3 4; do echo tick-$i; sleep 0.4; done' },
      {
        onprogress: (p) => notes.push({ at: Date.now() - started, p }),
      },
    );
    const doneAt = Date.now() - started;
    assert.notEqual(r.isError, true, textOf(r));
    assert.equal(r.structuredContent.stdout, 'tick-1\ntick-2\ntick-3\ntick-4\n');
    assert.ok(notes.length >= 2, `got ${notes.length} progress notifications: ${JSON.stringify(notes)}`);
    assert.ok(notes[0].at < doneAt - 500, `first progress at ${notes[0].at} ms, result at ${doneAt} ms: not streamed`);
    const progressValues = notes.map((n) => n.p.progress);
    for (let i = 1; i < progressValues.length; i++) {
      assert.ok(progressValues[i] > progressValues[i - 1], `progress increases: ${progressValues}`);
    }
    assert.match(JSON.stringify(notes.map((n) => n.p)), /tick-1/, 'the streamed notifications carry the output');
  });
});

describe('shutdown leaves nothing behind', () => {
  let w;
  const markers = [];

  before(() => {
    w = makeWorkspace();
  });

  after(() => {
    for (const m of markers) killMarker(m);
    w?.cleanup();
  });

  async function startRunning(marker) {
    const server = new RawServer(nativeConfig(w));
    await server.initialize();
    server.send({
      jsonrpc: '2.0',
      id: 'long',
      method: 'tools/call',
      params: { name: 'execute_command', arguments: { command: treeCommand(marker), timeout: 600 } },
    });
    const seen = await waitForMarker(marker);
    assert.ok(seen.length >= 2, `the tree is running: ${JSON.stringify(seen)}; stderr: ${server.stderrText}`);
    return server;
  }

  async function expectExit(server, ms) {
    const result = await Promise.race([server.exit, sleep(ms).then(() => null)]);
    if (!result) server.kill();
    return result;
  }

  test('EOF on stdin: the server exits promptly and kills the running command', async () => {
    const marker = uniqueMarker();
    markers.push(marker);
    const server = await startRunning(marker);
    const t0 = Date.now();
    server.child.stdin.end();
    const exit = await expectExit(server, 10000);
    assert.ok(exit, `server still running 10 s after EOF; stderr:\n${server.stderrText}`);
    assert.ok(Date.now() - t0 < 5000, `exit took ${Date.now() - t0} ms`);
    assert.equal(exit.code, 0, `exit ${JSON.stringify(exit)}`);
    assert.deepEqual(await waitMarkerGone(marker, 3000), [], 'no process of the tree survives the server');
  });

  test('SIGTERM: the server exits promptly and kills the running command', async () => {
    const marker = uniqueMarker();
    markers.push(marker);
    const server = await startRunning(marker);
    const t0 = Date.now();
    server.child.kill('SIGTERM');
    const exit = await expectExit(server, 10000);
    assert.ok(exit, `server still running 10 s after SIGTERM; stderr:\n${server.stderrText}`);
    assert.ok(Date.now() - t0 < 5000, `exit took ${Date.now() - t0} ms`);
    assert.deepEqual(await waitMarkerGone(marker, 3000), [], 'no process of the tree survives the server');
    assert.deepEqual(processesWith(marker), []);
  });
});
