// JSON-RPC and MCP protocol edges over a raw stdio pipe: things the SDK client would never send.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { RawServer, TOOLS, isValidUtf8, makeWorkspace, nativeConfig } from './lib/harness.mjs';

describe('protocol over a raw pipe', () => {
  let w;
  let config;
  const servers = [];

  function start() {
    const s = new RawServer(config);
    servers.push(s);
    return s;
  }

  before(() => {
    w = makeWorkspace();
    config = nativeConfig(w);
  });

  after(() => {
    for (const s of servers) s.kill();
    w?.cleanup();
  });

  for (const version of ['2025-06-18', '2025-03-26', '2024-11-05']) {
    test(`initialize negotiates protocol ${version}`, async () => {
      const s = start();
      const init = await s.initialize(version);
      assert.equal(init.jsonrpc, '2.0');
      assert.equal(init.result?.protocolVersion, version, JSON.stringify(init));
      assert.ok(init.result.capabilities?.tools, 'tools capability');
      assert.ok(init.result.serverInfo?.name);
      s.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      const { msg } = await s.response(2);
      assert.equal(msg.result.tools.length, TOOLS.length);
      if (version === '2024-11-05') {
        // outputSchema and structuredContent arrived in 2025-06-18; older clients still get text.
        s.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'execute_command', arguments: { command: 'echo old' } } });
        const { msg: call } = await s.response(3);
        assert.match(call.result.content[0].text, /old/);
      }
    });
  }

  test('an unknown protocol version gets the latest supported one', async () => {
    const s = start();
    const init = await s.initialize('1999-01-01');
    assert.ok(['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'].includes(init.result?.protocolVersion), JSON.stringify(init));
  });

  test('malformed JSON answers -32700 and the server keeps serving', async () => {
    const s = start();
    await s.initialize();
    s.sendRaw('{bad json\n');
    const { msg: parseError } = await s.waitFor((m) => m.error?.code === -32700, 10000, '-32700');
    assert.equal(parseError.jsonrpc, '2.0');
    assert.equal(parseError.id, null);
    s.send({ jsonrpc: '2.0', id: 7, method: 'ping' });
    const { msg } = await s.response(7);
    assert.deepEqual(msg.result, {});
  });

  test('unknown method answers -32601', async () => {
    const s = start();
    await s.initialize();
    s.send({ jsonrpc: '2.0', id: 'x1', method: 'no/such_method', params: {} });
    const { msg } = await s.response('x1');
    assert.equal(msg.error?.code, -32601, JSON.stringify(msg));
  });

  test('invalid request and bad tool arguments', async () => {
    const s = start();
    await s.initialize();
    s.send({ jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'execute_command', arguments: { command: 42 } } });
    const { msg: badType } = await s.response('a');
    assert.equal(badType.error?.code, -32602, JSON.stringify(badType));
    s.send({ jsonrpc: '2.0', id: 'b', method: 'tools/call', params: { name: 'read_file', arguments: {} } });
    const { msg: missing } = await s.response('b');
    assert.equal(missing.error?.code, -32602, JSON.stringify(missing));
    s.send({ jsonrpc: '2.0', id: 'c', method: 'tools/call', params: { arguments: {} } });
    const { msg: noName } = await s.response('c');
    assert.equal(noName.error?.code, -32602, JSON.stringify(noName));
    s.sendRaw('[1,2]\n');
    const { msg: notObject } = await s.waitFor((m) => m.error?.code === -32600 || m.error?.code === -32700, 10000, 'invalid request');
    assert.ok(notObject.error);
    s.send({ jsonrpc: '2.0', id: 'd', method: 'ping' });
    assert.deepEqual((await s.response('d')).msg.result, {});
  });

  test('a notification gets no response', async () => {
    const s = start();
    await s.initialize();
    const before = s.messages.length;
    s.send({ jsonrpc: '2.0', method: 'notifications/whatever' });
    s.send({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    await s.response('p');
    assert.equal(s.messages.length, before + 1, JSON.stringify(s.messages.slice(before)));
  });

  test('deep, value-heavy and over-long messages are refused and the server keeps serving', async () => {
    const s = start();
    await s.initialize();
    const deep = '['.repeat(200000) + ']'.repeat(200000);  // once a stack overflow
    s.sendRaw(`{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":${deep}}\n`);
    const { msg: deepError } = await s.response('deep');
    assert.equal(deepError.error?.code, -32600, JSON.stringify(deepError));
    assert.match(deepError.error.message, /deeper than 64/);
    const many = Array(2000000).fill('{}').join(',');  // 6 MB that once took 380 MB
    s.sendRaw(`{"jsonrpc":"2.0","id":"many","method":"tools/call","params":{"x":[${many}]}}\n`);
    const { msg: manyError } = await s.response('many');
    assert.equal(manyError.error?.code, -32600, JSON.stringify(manyError));
    assert.match(manyError.error.message, /more than 10000 JSON values/);
    const long = 'a'.repeat(9 * 1024 * 1024);  // past the default 8 MiB line
    s.sendRaw(`{"jsonrpc":"2.0","id":"long","method":"ping","params":{"s":"${long}"}}\n`);
    const { msg: longError } = await s.response('long');
    assert.equal(longError.error?.code, -32600, JSON.stringify(longError));
    assert.match(longError.error.message, /longer than 8388608 bytes/);
    s.send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
    assert.deepEqual((await s.response('after')).msg.result, {});
  });

  test('a request reusing an id in progress is not run and never answered with that id', async () => {
    const s = start();
    await s.initialize();
    const marker = `${w.ws}/duplicate-ran`;
    s.send({ jsonrpc: '2.0', id: 'dup', method: 'tools/call', params: { name: 'execute_command', arguments: { command: 'sleep 1; echo first' } } });
    s.send({ jsonrpc: '2.0', id: 'dup', method: 'tools/call', params: { name: 'execute_command', arguments: { command: `touch ${marker}` } } });
    const { msg: duplicate } = await s.waitFor((m) => m.error && m.id === null, 10000, 'the duplicate error');
    assert.equal(duplicate.error.code, -32600);
    assert.match(duplicate.error.message, /id "dup" is already used/);
    const { msg: first } = await s.response('dup');
    assert.match(first.result?.structuredContent?.stdout ?? '', /first/, JSON.stringify(first));
    s.send({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    await s.response('p');
    assert.equal(s.messages.filter((m) => m.id === 'dup').length, 1);
    assert.equal(existsSync(marker), false, 'the duplicate ran');
  });

  test('non-UTF-8 command output is sent as valid UTF-8', async () => {
    const s = start();
    await s.initialize();
    s.send({
      jsonrpc: '2.0',
      id: 'u',
      method: 'tools/call',
      params: { name: 'execute_command', arguments: { command: "printf '\\377\\376'; printf '\\303' 1>&2" } },
    });
    const { msg, raw } = await s.response('u');
    assert.ok(isValidUtf8(raw), 'the response line is valid UTF-8');
    assert.ok(msg.result, JSON.stringify(msg));
    assert.equal(msg.result.structuredContent.exit_code, 0);
    assert.ok(msg.result.structuredContent.stdout.length > 0, 'the bytes are represented');
  });
});
