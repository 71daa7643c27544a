// MCP tasks (2025-11-25) on a per-user agent: the local backend's per-user OS sandboxes (issue 31)
// over Streamable HTTP, two users by their tokens. A user's task runs in that user's sandbox and
// keeps it awake past idle_stop while it works; the other user cannot see, poll, read or cancel
// it; tasks/cancel ends the tree inside the user's sandbox. Skipped where bubblewrap is missing,
// unless EXECMCP_REQUIRE_SANDBOX=1 (CI).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';

import { makeWorkspace, processesWith, sleep, uniqueMarker, waitMarkerGone } from './lib/harness.mjs';
import { newToken, perUserSandboxConfig, rawSession, startHttpServer } from './lib/http.mjs';

const REV = '2025-11-25';
const IDLE_STOP = 2;
const required = process.env.EXECMCP_REQUIRE_SANDBOX === '1';
const bwrap = spawnSync('bwrap', ['--version'], { encoding: 'utf8' });
const skip = bwrap.status === 0 || required ? false : 'bubblewrap is not installed (apt-get install bubblewrap)';

describe('MCP tasks on a per-user local sandbox agent (2025-11-25, HTTP)', { skip }, () => {
  const agent = `tpu${process.pid}`;
  const tokens = { alice: newToken(), bob: newToken() };
  let w;
  let server;

  const session = (token) => rawSession(server.url(agent), token, REV, 'tasks-per-user');

  async function pollToEnd(s, taskId, seconds) {
    let got;
    for (let i = 0; i < seconds * 4; i += 1) {
      got = (await s.call('tasks/get', { taskId })).result;
      if (got.status !== 'working') return got;
      await sleep(250);
    }
    return got;
  }

  before(async () => {
    w = makeWorkspace();
    server = await startHttpServer(perUserSandboxConfig(w, agent, tokens, { idleStop: IDLE_STOP }).file);
  });

  after(async () => {
    await server?.stop();
    w?.cleanup();
  });

  test("a working task keeps its user's sandbox past idle_stop; the other user finds nothing", async () => {
    const alice = await session(tokens.alice);
    const bob = await session(tokens.bob);
    // /tmp is the sandbox's own: a sandbox stopped and started again under the task would lose it.
    const created = await alice.call('tools/call', {
      name: 'execute_command',
      arguments: { command: `echo mine > /tmp/mark; sleep ${IDLE_STOP * 2 + 1}; cat /tmp/mark; pwd` },
      task: { ttl: 120000 },
    });
    const { taskId } = created.result.task;
    assert.equal(created.result.task.status, 'working');

    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      const msg = await bob.call(method, { taskId });
      assert.equal(msg.error?.code, -32602, `${method}: ${JSON.stringify(msg)}`);
      assert.match(msg.error.message, /Task not found/);
    }
    assert.deepEqual((await bob.call('tasks/list', {})).result.tasks, []);
    assert.deepEqual((await alice.call('tasks/list', {})).result.tasks.map((t) => t.taskId), [taskId]);

    const got = await pollToEnd(alice, taskId, IDLE_STOP * 2 + 15);
    assert.equal(got.status, 'completed', JSON.stringify(got));
    const result = (await alice.call('tasks/result', { taskId })).result;
    assert.equal(result.structuredContent.stdout, 'mine\n/workspace\n', JSON.stringify(result));
    assert.equal(result.structuredContent.exit_code, 0);
    // Bob still finds nothing, also now that it has ended.
    assert.equal((await bob.call('tasks/result', { taskId })).error?.code, -32602);
  });

  test("tasks/cancel ends the tree in the user's sandbox", async () => {
    const alice = await session(tokens.alice);
    const marker = uniqueMarker();
    const created = await alice.call('tools/call', {
      name: 'execute_command',
      arguments: { command: `sh -c 'sleep 300 # ${marker}' & sleep 300 # ${marker}` },
      task: { ttl: 120000 },
    });
    const { taskId } = created.result.task;
    for (let i = 0; i < 40 && processesWith(marker).length < 2; i += 1) await sleep(100);
    assert.ok(processesWith(marker).length >= 2, 'the task\'s processes run');
    const cancelled = await alice.call('tasks/cancel', { taskId });
    assert.equal(cancelled.result.status, 'cancelled', JSON.stringify(cancelled));
    await waitMarkerGone(marker, 2000);
    assert.equal((await alice.call('tasks/get', { taskId })).result.status, 'cancelled');
  });
});
