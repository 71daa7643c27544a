// Who may reach which agent of `execmcp serve --http`: no token or a wrong one is 401 with a
// WWW-Authenticate challenge, a token bound to another agent or a foreign Origin is 403, a body
// past the limit is 413 - each with a body that says what to do - and a session is bound to the
// token that opened it. Skipped, saying why, while this execmcp has no --http.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';

import { Client as ClientV2, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { makeWorkspace } from './lib/harness.mjs';
import { httpSupport, initializeRequest, newToken, rawPost, sharedConfig, startHttpServer } from './lib/http.mjs';

const support = httpSupport();

// The response says what went wrong in words, not only a status code.
function assertExplains(res, re, what) {
  assert.ok(res.text.trim().length > 0, `${what}: the ${res.status} response has an empty body`);
  assert.match(res.text, re, `${what}: the ${res.status} body does not say what to do: ${res.text.slice(0, 500)}`);
}

// Sends a POST whose headers announce `announced` bytes and only the first bytes of it, then
// waits: the server must refuse from the header alone. With `chunked`, streams 1 MiB chunks
// until the server answers (or `maxBytes` went out). Resolves { status, text }, or { error } if
// the connection died without an HTTP answer.
function postOversized(url, token, { announced, chunked = false, maxBytes = 64 << 20 }) {
  return new Promise((resolve) => {
    const u = new URL(url);
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` };
    if (!chunked) headers['content-length'] = String(announced);
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      let text = '';
      res.on('data', (d) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode, text }));
      res.on('error', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', (error) => {
      if (!answered) resolve({ error: error.message });
    });
    const chunk = Buffer.alloc(1 << 20, 0x20);
    req.write('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"');
    if (!chunked) return;
    let sent = 0;
    const pump = () => {
      while (!answered && sent < maxBytes) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      if (!answered && chunked) req.end('"}}');
    };
    pump();
  });
}

if (!support.ok) {
  test('Streamable HTTP authentication and limits', { skip: support.why }, () => {});
} else {
  describe('Streamable HTTP authentication and limits', () => {
    const tokA = newToken();
    const tokB = newToken();
    const tokAll = newToken();
    let w;
    let server;

    before(async () => {
      w = makeWorkspace();
      const config = sharedConfig(w, {
        agents: ['alpha', 'beta'],
        tokens: [
          { name: 'token-a', token: tokA, agents: ['alpha'] },
          { name: 'token-b', token: tokB, agents: ['beta'] },
          { name: 'token-all', token: tokAll, agents: ['*'] },
        ],
      });
      server = await startHttpServer(config);
    });

    after(async () => {
      await server?.stop();
      w?.cleanup();
    });

    test('the right token gets through (the control for every refusal below)', async () => {
      const res = await rawPost(server.url('alpha'), initializeRequest, { token: tokA });
      assert.equal(res.status, 200, res.text);
      const all = await rawPost(server.url('beta'), initializeRequest, { token: tokAll });
      assert.equal(all.status, 200, all.text);
    });

    test('no token: 401 with a Bearer challenge', async () => {
      const res = await rawPost(server.url('alpha'), initializeRequest);
      assert.equal(res.status, 401, res.text);
      assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer\b/i);
      assertExplains(res, /token|authoriz/i, 'no token');
    });

    test('a wrong token: 401', async () => {
      const res = await rawPost(server.url('alpha'), initializeRequest, { token: newToken() });
      assert.equal(res.status, 401, res.text);
      assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer\b/i);
      assertExplains(res, /token|authoriz/i, 'wrong token');
    });

    test("another agent's token: 403, and the 2.x client gives up instead of falling back", async () => {
      const res = await rawPost(server.url('alpha'), initializeRequest, { token: tokB });
      assert.equal(res.status, 403, res.text);
      assertExplains(res, /agent/i, 'token of another agent');
      const client = new ClientV2({ name: 'execmcp-e2e', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      const transport = new StreamableHTTPClientTransport(new URL(server.url('alpha')), {
        requestInit: { headers: { Authorization: `Bearer ${tokB}` } },
      });
      await assert.rejects(client.connect(transport), (err) => /403|denied|forbidden|insufficient.scope/i.test(`${err.name} ${err.code} ${err.message}`));
      await client.close().catch(() => {});
    });

    test('a foreign Origin: 403; our own origin is fine', async () => {
      const res = await rawPost(server.url('alpha'), initializeRequest, { token: tokA, headers: { origin: 'http://evil.example.com' } });
      assert.equal(res.status, 403, res.text);
      assertExplains(res, /origin/i, 'foreign Origin');
      const own = await rawPost(server.url('alpha'), initializeRequest, { token: tokA, headers: { origin: server.base } });
      assert.equal(own.status, 200, own.text);
    });

    test('an unknown agent: 404', async () => {
      const res = await rawPost(server.url('no-such-agent'), initializeRequest, { token: tokAll });
      assert.equal(res.status, 404, res.text);
      assertExplains(res, /agent/i, 'unknown agent');
    });

    test('a body announced past the limit: 413 before it is read', async () => {
      const res = await postOversized(server.url('alpha'), tokA, { announced: 1 << 30 });
      assert.equal(res.status, 413, JSON.stringify(res).slice(0, 500));
      assertExplains({ status: res.status, text: res.text }, /body|large|limit|bytes/i, 'oversized body');
    });

    test('a chunked body that grows past the limit: 413', async () => {
      const res = await postOversized(server.url('alpha'), tokA, { chunked: true });
      assert.equal(res.status, 413, JSON.stringify(res).slice(0, 500));
      const after = await rawPost(server.url('alpha'), initializeRequest, { token: tokA });
      assert.equal(after.status, 200, 'the server serves on after refusing a body');
    });

    test('a session opened with one token is refused with another', async () => {
      const init = await rawPost(server.url('alpha'), initializeRequest, { token: tokA });
      assert.equal(init.status, 200, init.text);
      const session = init.headers.get('mcp-session-id');
      assert.ok(session, 'a 2025-06-18 initialize over HTTP gets an Mcp-Session-Id');
      const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
      const own = await rawPost(server.url('alpha'), { jsonrpc: '2.0', method: 'notifications/initialized' }, { token: tokA, headers });
      assert.equal(own.status, 202, own.text);
      const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
      const ok = await rawPost(server.url('alpha'), list, { token: tokA, headers });
      assert.equal(ok.status, 200, ok.text);
      const other = await rawPost(server.url('alpha'), list, { token: tokAll, headers });
      assert.ok([403, 404].includes(other.status), `another token using the session got ${other.status}: ${other.text}`);
    });
  });
}
