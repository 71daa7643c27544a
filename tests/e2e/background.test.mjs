// The background-shell tools on the local backend (the shared suite in lib/background.mjs), the
// example config configs/local-background.yaml, and agents that do not get the tools: background
// disabled, or a backend without the capability.
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

import { BACKGROUND_TOOLS, backgroundSuite, bg } from './lib/background.mjs';
import {
  TOOLS,
  callTool,
  connectClient,
  killMarker,
  makeWorkspace,
  nativeConfig,
  processesWith,
  uniqueMarker,
  waitMarkerGone,
  waitUntil,
} from './lib/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const configsDir = path.resolve(here, '..', '..', 'configs');

backgroundSuite({ name: 'local', backend: '    backend: {plugin: local, settings: {}}\n' });

describe('configs/local-background.yaml', () => {
  let w;
  let conn;
  const m = uniqueMarker();

  before(async () => {
    w = makeWorkspace();
    conn = await connectClient(path.join(configsDir, 'local-background.yaml'), {
      agent: 'default',
      env: { EXECMCP_WORKSPACE: w.ws },
    });
  });

  after(async () => {
    await conn?.close();
    killMarker(m);
    w?.cleanup();
  });

  test('runs a background shell in the workspace it names, and kills it', async () => {
    const started = await bg(conn.client, 'start_background_shell', { command: `pwd; sleep 1000.${m}` });
    assert.equal(started.success, true, JSON.stringify(started));
    assert.equal(started.work_dir, w.ws);
    const out = await waitUntil(async () => {
      const o = await bg(conn.client, 'get_background_shell_output', { shell_id: started.shell_id });
      return o.stdout !== '' && o;
    }, { timeoutMs: 20000, stepMs: 100 });
    assert.equal(out.stdout, w.ws);
    assert.equal(processesWith(m).length, 1);
    const killed = await bg(conn.client, 'kill_background_shell', { shell_id: started.shell_id });
    assert.equal(killed.status, 'killed');
    assert.deepEqual(processesWith(m), []);
  });

  test("its filters refuse sudo in the background too", async () => {
    const r = await bg(conn.client, 'start_background_shell', { command: 'sudo id' });
    assert.equal(r.success, false);
    assert.match(r.error, /^Command validation error: /);
  });

  // Last: it closes the server.
  test('shells still running end when the server exits', async () => {
    const end = uniqueMarker();
    try {
      const started = await bg(conn.client, 'start_background_shell', { command: `setsid sleep 1000.${end} & sleep 1000.${end}` });
      assert.equal(started.success, true, JSON.stringify(started));
      const seen = await waitUntil(() => processesWith(end).length >= 2, { timeoutMs: 20000 });
      assert.ok(seen, `the tree runs: ${JSON.stringify(processesWith(end))}`);
      await conn.close();
      conn = undefined;
      assert.deepEqual(await waitMarkerGone(end, 20000), [], 'the server ended them, the escapee too');
    } finally {
      killMarker(end);
    }
  });
});

// An agent without the tools: they are not listed, and a call is the "Unknown tool" error.
function withoutBackgroundTools(name, makeConfig) {
  describe(`no background-shell tools: ${name}`, { skip: makeConfig.skip }, () => {
    let w;
    let conn;

    before(async () => {
      w = makeWorkspace();
      conn = await connectClient(makeConfig(w));
    });

    after(async () => {
      await conn?.close();
      w?.cleanup();
    });

    test('the five tools are not listed, the others are', async () => {
      const names = (await conn.client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(names, TOOLS.filter((t) => !BACKGROUND_TOOLS.includes(t)));
    });

    for (const tool of BACKGROUND_TOOLS) {
      test(`calling ${tool} is "Unknown tool" (-32602)`, async () => {
        await assert.rejects(callTool(conn.client, tool, tool.endsWith('shells') ? {} : { shell_id: 'shell_00000000', command: 'true' }), (err) => {
          assert.equal(err.code, -32602, String(err));
          assert.match(err.message, new RegExp(`Unknown tool: ${tool}`));
          return true;
        });
      });
    }
  });
}

withoutBackgroundTools('local with background: {enabled: false}', (w) =>
  nativeConfig(w, { extra: '    background: {enabled: false}\n' }),
);

// tests/host's fixture backend implements no optional interface. CMake names its directory.
const fixtureDir = process.env.EXECMCP_FIXTURE_PLUGIN_DIR;
const fixtureConfig = (w) =>
  nativeConfig(w, {
    filters: 'none',
    preamble: `plugin_paths: [${JSON.stringify(fixtureDir)}]\n`,
    backend: '    backend: {plugin: fixture-echo, settings: {}}\n',
  });
fixtureConfig.skip = fixtureDir ? false : 'EXECMCP_FIXTURE_PLUGIN_DIR is not set (ctest sets it to the fixture plugins of tests/host)';
withoutBackgroundTools('a backend without the capability (fixture-echo)', fixtureConfig);
