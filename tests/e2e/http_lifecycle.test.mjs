// The shared server's life: `GET /health` answers without credentials and gives nothing away,
// `--agent` restricts which agents are served, and SIGTERM with a call running kills that call's
// process tree and exits 0. Skipped, saying why, while this execmcp has no --http.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { CLIENT_KINDS, callKind, connectKind } from './lib/clients.mjs';
import { killMarker, makeWorkspace, uniqueMarker, waitForMarker, waitMarkerGone } from './lib/harness.mjs';
import { httpSupport, initializeRequest, newToken, rawPost, sharedConfig, startHttpServer } from './lib/http.mjs';

const support = httpSupport();

if (!support.ok) {
  test('Streamable HTTP server lifecycle', { skip: support.why }, () => {});
} else {
  describe('Streamable HTTP server lifecycle', () => {
    const token = newToken();
    const markers = [];
    const servers = [];
    let w;
    let config;

    async function start(args = []) {
      const s = await startHttpServer(config, { args });
      servers.push(s);
      return s;
    }

    before(() => {
      w = makeWorkspace();
      config = sharedConfig(w, { agents: ['alpha', 'beta'], tokens: [{ name: 'ops', token, agents: ['*'] }] });
    });

    after(async () => {
      for (const s of servers) await s.stop();
      for (const m of markers) killMarker(m);
      w?.cleanup();
    });

    test('GET /health answers 200 without credentials and names no token or path', async () => {
      const s = await start();
      const res = await fetch(`${s.base}/health`);
      const text = await res.text();
      assert.equal(res.status, 200, text);
      assert.ok(!text.includes(token), 'the token is not in /health');
      assert.ok(!text.includes(w.root), 'no workspace path in /health');
    });

    test('--agent restricts the agents served: the others are 404', async () => {
      const s = await start(['--agent', 'alpha']);
      const served = await rawPost(s.url('alpha'), initializeRequest, { token });
      assert.equal(served.status, 200, served.text);
      const other = await rawPost(s.url('beta'), initializeRequest, { token });
      assert.equal(other.status, 404, other.text);
    });

    test('SIGTERM with a call running: the command tree is killed and the server exits 0', async () => {
      const s = await start();
      const conn = await connectKind(CLIENT_KINDS[0], { http: { url: s.url('alpha'), token, stderr: s.stderr } });
      const marker = uniqueMarker();
      markers.push(marker);
      const call = callKind(conn, 'execute_command', { command: `sh -c 'sleep 1000.${marker} & sleep 1000.${marker}; wait'`, timeout: 600 });
      call.catch(() => {});
      const seen = await waitForMarker(marker);
      assert.ok(seen.length >= 2, `the tree is running: ${JSON.stringify(seen)}`);
      const exit = await s.stop(30000);
      await conn.close();
      assert.equal(exit.forced, undefined, `still running 30 s after SIGTERM; stderr:\n${s.stderr().slice(-5000)}`);
      assert.equal(exit.code, 0, `exit ${JSON.stringify(exit)}; stderr:\n${s.stderr().slice(-5000)}`);
      assert.deepEqual(await waitMarkerGone(marker, 5000), [], 'no process of the tree survives the server');
    });
  });
}
