// MCP tasks (2025-11-25) on the Docker backends, through the official SDK 1.x client's
// experimental tasks API: a command polled to completion, and tasks/cancel ending the whole tree
// in the container (the container's processes are visible in the host's /proc under runc).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';

import {
  connectClient,
  dockerAvailable,
  killMarker,
  makeWorkspace,
  nativeConfig,
  uniqueMarker,
  waitForMarker,
  waitMarkerGone,
} from '../lib/harness.mjs';

const IMAGE = process.env.EXECMCP_DOCKER_IMAGE || 'execmcp/runtime:latest';
const available = dockerAvailable(IMAGE);
const skip = available.ok ? false : available.why;

for (const plugin of ['docker-api', 'docker-cli']) {
  describe(`MCP tasks on a ${plugin} agent`, { skip }, () => {
    let w;
    let conn;
    const agent = `e2etask${plugin.replace('-', '')}${process.pid}`;
    const markers = [];

    before(async () => {
      w = makeWorkspace();
      const config = nativeConfig(w, {
        agent,
        filters: 'none',
        backend: `    backend: {plugin: ${plugin}, settings: {image: ${JSON.stringify(IMAGE)}}}\n`,
      });
      conn = await connectClient(config, { agent });
    });

    after(async () => {
      await conn?.close();
      const ids = spawnSync('docker', ['ps', '-aq', '--filter', `name=${agent}`], { encoding: 'utf8' }).stdout.trim();
      if (ids) spawnSync('docker', ['rm', '-f', ...ids.split(/\s+/)]);
      for (const m of markers) killMarker(m);
      w?.cleanup();
    });

    test('a command longer than the request timeout completes through polling', async () => {
      const seen = [];
      let result;
      const stream = conn.client.experimental.tasks.callToolStream(
        { name: 'execute_command', arguments: { command: 'sleep 2; echo in-container; id -u' } },
        undefined,
        { timeout: 1500 },
      );
      for await (const message of stream) {
        seen.push(message.type);
        if (message.type === 'error') throw message.error;
        if (message.type === 'result') result = message.result;
      }
      assert.equal(seen[0], 'taskCreated', seen.join(' '));
      assert.match(result.structuredContent.stdout, /in-container\n1000\n/);
    });

    test('tasks/cancel ends the whole tree in the container within a second', async () => {
      const marker = uniqueMarker();
      markers.push(marker);
      const stream = conn.client.experimental.tasks.callToolStream(
        { name: 'execute_command', arguments: { command: `sh -c 'sleep 1000.${marker} & sleep 1000.${marker}; wait' tree-${marker}` } },
        undefined,
        { timeout: 5000 },
      );
      let cancelled;
      let last;
      for await (const message of stream) {
        last = message;
        if (message.type === 'taskCreated') {
          assert.ok((await waitForMarker(marker)).length > 0, 'the tree started');
          cancelled = await conn.client.experimental.tasks.cancelTask(message.task.taskId);
          assert.equal(cancelled.status, 'cancelled');
          assert.deepEqual(await waitMarkerGone(marker, 1000), [], 'no process of the tree survives');
        }
      }
      assert.ok(cancelled, 'the task was created and cancelled');
      assert.equal(last.type, 'error', 'the stream reports the cancel');
    });
  });
}
