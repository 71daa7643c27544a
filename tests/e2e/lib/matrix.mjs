// The behaviour every client kind must see from execmcp on every transport: connect, tools/list,
// a tool call with its structured result, progress while a command runs, and a cancel that kills
// the command's process tree. Defined once, run per client kind by the stdio and HTTP suites.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { REV2026, callKind } from './clients.mjs';
import { TOOLS, killMarker, textOf, uniqueMarker, waitForMarker, waitMarkerGone } from './harness.mjs';

// `sh -c` running two sleeps, one in the background; both carry the marker in their argv.
function treeCommand(marker) {
  return `sh -c 'sleep 1000.${marker} & sleep 1000.${marker}; wait' tree-${marker}`;
}


// kinds: CLIENT_KINDS entries. connect(kind): Promise<conn> (lib/clients.mjs connectKind).
// pending: node:test options for the tests that need execmcp to speak 2026-07-28 (rev2026Options).
export function defineClientMatrix(title, kinds, { connect, pending }) {
  for (const kind of kinds) {
    describe(`${title}: ${kind.name}`, () => {
      // One connection per kind, opened by the first test that needs it: a failed connect then
      // fails (or, when pending, marks as TODO) each test instead of a hook.
      let connecting;
      const conn = () => (connecting ??= connect(kind));
      const markers = [];
      // The pinned client cannot even connect before execmcp speaks 2026-07-28.
      const opts = kind.pinned ? pending : {};

      after(async () => {
        for (const m of markers) killMarker(m);
        if (connecting) await (await connecting.catch(() => null))?.close();
      });

      test('connects and lists the tools', opts, async () => {
        const c = await conn();
        const { tools } = await c.client.listTools();
        assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
        const exec = tools.find((t) => t.name === 'execute_command');
        assert.equal(exec.inputSchema.type, 'object');
        assert.ok(exec.outputSchema, 'execute_command declares its outputSchema');
        if (kind.mode === 'legacy') assert.equal(c.era(), 'legacy');
        if (kind.pinned) {
          assert.equal(c.era(), 'modern');
          assert.equal(c.version(), REV2026);
        }
      });

      if (kind.modern && !kind.pinned) {
        test('negotiates 2026-07-28 when execmcp offers it', pending, async () => {
          const c = await conn();
          assert.equal(c.era(), 'modern', `era ${c.era()}, version ${c.version()}`);
          assert.equal(c.version(), REV2026);
        });
      }

      test('execute_command `echo hi`: text and structuredContent', opts, async () => {
        const c = await conn();
        const r = await callKind(c, 'execute_command', { command: 'echo hi' });
        assert.notEqual(r.isError, true, textOf(r));
        assert.match(textOf(r), /\bhi\b/);
        const s = r.structuredContent;
        assert.equal(s.stdout, 'hi\n');
        assert.equal(s.stderr, '');
        assert.equal(s.exit_code, 0);
        assert.equal(s.success, true);
        assert.equal(s.timed_out, false);
        assert.equal(s.cancelled, false);
      });

      test('progress notifications arrive while a command streams output', opts, async () => {
        const c = await conn();
        const notes = [];
        const started = Date.now();
        const r = await callKind(
          c,
          'execute_command',
          { command: 'for i in 1 2 3 4; do echo tick-$i; sleep 0.4; done' },
          { onprogress: (p) => notes.push({ at: Date.now() - started, p }) },
        );
        const doneAt = Date.now() - started;
        assert.notEqual(r.isError, true, textOf(r));
        assert.equal(r.structuredContent.stdout, 'tick-1\ntick-2\ntick-3\ntick-4\n');
        assert.ok(notes.length >= 2, `got ${notes.length} progress notifications: ${JSON.stringify(notes)}`);
        assert.ok(notes[0].at < doneAt - 500, `first progress at ${notes[0].at} ms, result at ${doneAt} ms: not streamed`);
        const values = notes.map((n) => n.p.progress);
        for (let i = 1; i < values.length; i++) assert.ok(values[i] > values[i - 1], `progress increases: ${values}`);
      });

      test('aborting the call kills the command and its children', opts, async () => {
        const c = await conn();
        const marker = uniqueMarker();
        markers.push(marker);
        const controller = new AbortController();
        const call = callKind(c, 'execute_command', { command: treeCommand(marker), timeout: 600 }, { signal: controller.signal });
        const seen = await waitForMarker(marker);
        assert.ok(seen.length >= 2, `the tree is running: ${JSON.stringify(seen)}\n${c.stderr()}`);
        controller.abort('the e2e test cancels');
        await assert.rejects(call);
        assert.deepEqual(await waitMarkerGone(marker, 5000), [], 'cancel kills every process of the tree');
        const r = await callKind(c, 'execute_command', { command: 'echo after-cancel' });
        assert.equal(r.structuredContent.stdout, 'after-cancel\n', 'the server serves on after a cancel');
      });
    });
  }
}
