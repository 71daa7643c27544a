// Revision 2026-07-28 on a raw stdio pipe, with no initialize: what the 2.x client needs from
// execmcp byte for byte (server/discover's shape, resultType on every result, the cache hints it
// rejects a tools/list without) and the revision's errors for a bad envelope. TODO until execmcp
// offers 2026-07-28 in server/discover (lib/clients.mjs, EXECMCP_E2E_REV2026).
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { REV2026, rev2026Options } from './lib/clients.mjs';
import { RawServer, TOOLS, makeWorkspace, nativeConfig } from './lib/harness.mjs';

const w = makeWorkspace();
const configFile = nativeConfig(w, { filters: 'none' });
const pending = await rev2026Options(configFile);

const envelope = {
  'io.modelcontextprotocol/protocolVersion': REV2026,
  'io.modelcontextprotocol/clientInfo': { name: 'execmcp-e2e-raw', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

function assertCacheHints(result, what) {
  assert.ok(Number.isInteger(result.ttlMs) && result.ttlMs >= 0, `${what}: ttlMs must be an integer >= 0: ${JSON.stringify(result.ttlMs)}`);
  assert.ok(['public', 'private'].includes(result.cacheScope), `${what}: cacheScope must be public|private: ${JSON.stringify(result.cacheScope)}`);
}

describe('2026-07-28 over a raw stdio pipe, no initialize', () => {
  const servers = [];
  const start = () => {
    const s = new RawServer(configFile);
    servers.push(s);
    return s;
  };

  after(() => {
    for (const s of servers) s.kill();
    w.cleanup();
  });

  test('server/discover as the first message: versions, capabilities, serverInfo, resultType, cache hints', pending, async () => {
    const s = start();
    s.send({ jsonrpc: '2.0', id: 'server-discover-probe-1', method: 'server/discover', params: { _meta: envelope } });
    const { msg } = await s.response('server-discover-probe-1');
    const r = msg.result;
    assert.ok(r, JSON.stringify(msg));
    assert.ok(r.supportedVersions.includes(REV2026), JSON.stringify(r.supportedVersions));
    assert.ok(r.capabilities?.tools, 'tools capability');
    assert.equal(r.resultType, 'complete');
    assertCacheHints(r, 'server/discover');
    assert.equal(r._meta?.['io.modelcontextprotocol/serverInfo']?.name, 'execmcp');
  });

  test('tools/list with the _meta envelope on a process that never saw discover or initialize', pending, async () => {
    const s = start();
    s.send({ jsonrpc: '2.0', id: 0, method: 'tools/list', params: { _meta: envelope } });
    const { msg } = await s.response(0);
    assert.ok(msg.result, JSON.stringify(msg));
    assert.equal(msg.result.resultType, 'complete', 'the 2.x client rejects a 2026-07-28 result without resultType');
    assertCacheHints(msg.result, 'tools/list (the 2.x client rejects it without them)');
    assert.equal(msg.result.tools.length, TOOLS.length);
  });

  test('tools/call echo hi: resultType and structuredContent', pending, async () => {
    const s = start();
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'execute_command', arguments: { command: 'echo hi' }, _meta: envelope } });
    const { msg } = await s.response(1);
    assert.ok(msg.result, JSON.stringify(msg));
    assert.equal(msg.result.resultType, 'complete');
    assert.equal(msg.result.structuredContent?.stdout, 'hi\n');
  });

  test('an unsupported protocolVersion in _meta: -32022 naming the supported and the requested versions', pending, async () => {
    const s = start();
    const meta = { ...envelope, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' };
    s.send({ jsonrpc: '2.0', id: 'v', method: 'tools/list', params: { _meta: meta } });
    const { msg } = await s.response('v');
    assert.equal(msg.error?.code, -32022, JSON.stringify(msg));
    assert.ok(msg.error.data?.supported?.includes(REV2026), JSON.stringify(msg.error));
    assert.equal(msg.error.data?.requested, '2099-01-01');
  });

  test('an envelope without clientCapabilities: -32602, and the server serves on', pending, async () => {
    const s = start();
    const { 'io.modelcontextprotocol/clientCapabilities': _, ...meta } = envelope;
    s.send({ jsonrpc: '2.0', id: 'm', method: 'server/discover', params: { _meta: meta } });
    const { msg } = await s.response('m');
    assert.equal(msg.error?.code, -32602, JSON.stringify(msg));
    s.send({ jsonrpc: '2.0', id: 'ok', method: 'tools/list', params: { _meta: envelope } });
    const { msg: ok } = await s.response('ok');
    assert.ok(ok.result?.tools, JSON.stringify(ok));
  });
});
