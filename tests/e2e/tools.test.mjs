// The tools through the official MCP SDK client against a real execmcp on the local backend.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { TOOLS, callTool, connectClient, makeWorkspace, nativeConfig, randomName, textOf } from './lib/harness.mjs';

const OUTPUT_CAP = 1048576;

describe('tools over the MCP SDK client (local backend)', () => {
  let w;
  let conn;
  let client;

  before(async () => {
    w = makeWorkspace();
    conn = await connectClient(nativeConfig(w, { outputCap: OUTPUT_CAP }));
    client = conn.client;
  });

  after(async () => {
    await conn?.close();
    w?.cleanup();
  });

  test('initialize reports the server and a tools capability', () => {
    const info = client.getServerVersion();
    assert.ok(info?.name, 'serverInfo.name is set');
    assert.ok(info?.version, 'serverInfo.version is set');
    assert.ok(client.getServerCapabilities()?.tools, 'tools capability advertised');
  });

  test('listTools returns every tool, each with input and output schema', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, TOOLS);
    for (const t of tools) {
      assert.ok(t.description && t.description.length > 10, `${t.name} has a description`);
      assert.equal(t.inputSchema?.type, 'object', `${t.name} inputSchema is an object schema`);
      assert.equal(t.outputSchema?.type, 'object', `${t.name} outputSchema is an object schema`);
    }
    const exec = tools.find((t) => t.name === 'execute_command');
    assert.ok(exec.inputSchema.properties.command, 'execute_command takes command');
    assert.ok(exec.inputSchema.properties.timeout, 'execute_command takes timeout');
    assert.ok(exec.inputSchema.properties.work_dir, 'execute_command takes work_dir');
    assert.deepEqual(exec.inputSchema.required, ['command']);
    for (const field of ['success', 'exit_code', 'stdout', 'stderr', 'execution_time', 'timed_out', 'truncated']) {
      assert.ok(exec.outputSchema.properties[field], `execute_command outputSchema has ${field}`);
    }
    const read = tools.find((t) => t.name === 'read_file');
    for (const field of ['path', 'offset', 'line_count']) assert.ok(read.inputSchema.properties[field], `read_file takes ${field}`);
    const doc = tools.find((t) => t.name === 'read_docstring');
    for (const field of ['module', 'function']) assert.ok(doc.inputSchema.properties[field], `read_docstring takes ${field}`);
  });

  test('execute_command echo hi: structuredContent and text', async () => {
    const r = await callTool(client, 'execute_command', { command: 'echo hi' });
    assert.notEqual(r.isError, true, textOf(r));
    const s = r.structuredContent;
    assert.equal(s.success, true);
    assert.equal(s.exit_code, 0);
    assert.equal(s.stdout, 'hi\n');
    assert.equal(s.stderr, '');
    assert.equal(s.timed_out, false);
    assert.equal(s.truncated, false);
    assert.equal(typeof s.execution_time, 'number');
    assert.ok(s.execution_time >= 0 && s.execution_time < 30, `execution_time ${s.execution_time}`);
    assert.match(textOf(r), /hi/);
  });

  test('the command runs in the agent workspace', async () => {
    const r = await callTool(client, 'execute_command', { command: 'pwd' });
    assert.equal(r.structuredContent.stdout.trim(), w.ws);
  });

  test('non-zero exit is a result, not a tool error', async () => {
    const r = await callTool(client, 'execute_command', { command: 'exit 3' });
    assert.notEqual(r.isError, true, textOf(r));
    assert.equal(r.structuredContent.success, false);
    assert.equal(r.structuredContent.exit_code, 3);
    assert.equal(r.structuredContent.timed_out, false);
  });

  test('stderr is kept apart from stdout', async () => {
    const r = await callTool(client, 'execute_command', { command: 'echo out; echo err 1>&2' });
    assert.equal(r.structuredContent.stdout, 'out\n');
    assert.equal(r.structuredContent.stderr, 'err\n');
  });

  test('work_dir inside the workspace is used', async () => {
    fs.mkdirSync(path.join(w.ws, 'sub'), { recursive: true });
    const r = await callTool(client, 'execute_command', { command: 'pwd', work_dir: 'sub' });
    assert.notEqual(r.isError, true, textOf(r));
    assert.equal(r.structuredContent.stdout.trim(), path.join(w.ws, 'sub'));
  });

  test('work_dir outside the workspace is refused and nothing runs', async () => {
    const name = randomName('escaped');
    const r = await callTool(client, 'execute_command', { command: `touch ${name}`, work_dir: w.outside });
    assert.equal(r.isError, true, `expected isError, got ${JSON.stringify(r)}`);
    assert.ok(textOf(r).length > 0, 'the error says why');
    assert.equal(fs.existsSync(path.join(w.outside, name)), false, 'command must not have run');
    const r2 = await callTool(client, 'execute_command', { command: 'pwd', work_dir: '../outside' });
    assert.equal(r2.isError, true, `relative escape: ${JSON.stringify(r2)}`);
  });

  test('symlink escape is refused for work_dir, read_file and write_file', async () => {
    const secret = path.join(w.outside, 'secret.txt');
    fs.writeFileSync(secret, 'top secret\n');
    const link = path.join(w.ws, randomName('link'));
    fs.symlinkSync(w.outside, link);
    const name = randomName('via-link');

    const r = await callTool(client, 'execute_command', { command: `touch ${name}`, work_dir: link });
    assert.equal(r.isError, true, `work_dir via symlink: ${JSON.stringify(r)}`);
    assert.equal(fs.existsSync(path.join(w.outside, name)), false);

    const rr = await callTool(client, 'read_file', { path: path.join(path.basename(link), 'secret.txt') });
    assert.equal(rr.isError, true, `read_file via symlink: ${JSON.stringify(rr)}`);
    assert.doesNotMatch(JSON.stringify(rr), /top secret/);

    const rw = await callTool(client, 'write_file', { path: path.join(link, name), content: 'x' });
    assert.equal(rw.isError, true, `write_file via symlink: ${JSON.stringify(rw)}`);
    assert.equal(fs.existsSync(path.join(w.outside, name)), false);
  });

  test('write_file then read_file, whole and with offset/line_count', async () => {
    const lines = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`);
    const content = lines.join('\n') + '\n';
    const wr = await callTool(client, 'write_file', { path: 'notes/a.txt', content });
    assert.notEqual(wr.isError, true, textOf(wr));
    assert.equal(wr.structuredContent.bytes_written, Buffer.byteLength(content));
    assert.equal(fs.readFileSync(path.join(w.ws, 'notes/a.txt'), 'utf8'), content, 'file on disk');

    const all = await callTool(client, 'read_file', { path: 'notes/a.txt' });
    assert.notEqual(all.isError, true, textOf(all));
    assert.equal(all.structuredContent.content, content);
    assert.equal(all.structuredContent.total_lines, 10);
    assert.equal(all.structuredContent.lines_returned, 10);
    assert.equal(all.structuredContent.truncated, false);
    assert.equal(all.structuredContent.start_line, 1, 'lines count from 1');

    // offset counts the lines skipped from the start (MassGen's file API): 3 skips lines 1-3.
    const part = await callTool(client, 'read_file', { path: path.join(w.ws, 'notes/a.txt'), offset: 3, line_count: 2 });
    assert.notEqual(part.isError, true, textOf(part));
    const s = part.structuredContent;
    assert.equal(s.total_lines, 10);
    assert.equal(s.lines_returned, 2);
    assert.equal(s.start_line, 4);
    assert.equal(s.offset, 3);
    assert.equal(s.truncated, false, 'all requested lines were returned');
    assert.equal(s.content.replace(/\n$/, ''), 'line 4\nline 5');

    const tail = await callTool(client, 'read_file', { path: 'notes/a.txt', offset: 8, line_count: 5 });
    assert.equal(tail.structuredContent.lines_returned, 2, 'only two lines are left after line 8');
    assert.equal(tail.structuredContent.content.replace(/\n$/, ''), 'line 9\nline 10');

    const zero = await callTool(client, 'read_file', { path: 'notes/a.txt', offset: 0 });
    assert.notEqual(zero.isError, true, `offset 0 = from the first line: ${textOf(zero)}`);
    assert.equal(zero.structuredContent.content, content, 'offset 0 reads the whole file');
    assert.equal(zero.structuredContent.start_line, 1);

    const bad = await callTool(client, 'read_file', { path: 'notes/a.txt', offset: -1 }).catch((e) => e);
    assert.ok(bad.code === -32602 || bad.isError === true, `offset -1 is refused: ${JSON.stringify(bad)}`);
  });

  test('read_file of a context path works; write_file there is refused', async () => {
    fs.writeFileSync(path.join(w.ctx, 'ref.txt'), 'reference\n');
    const r = await callTool(client, 'read_file', { path: path.join(w.ctx, 'ref.txt') });
    assert.notEqual(r.isError, true, textOf(r));
    assert.equal(r.structuredContent.content, 'reference\n');
    const wr = await callTool(client, 'write_file', { path: path.join(w.ctx, 'new.txt'), content: 'x' });
    assert.equal(wr.isError, true, `write to read-only context path: ${JSON.stringify(wr)}`);
    assert.equal(fs.existsSync(path.join(w.ctx, 'new.txt')), false);
  });

  test('read_file of a missing file is a tool error', async () => {
    const r = await callTool(client, 'read_file', { path: 'does/not/exist.txt' });
    assert.equal(r.isError, true, JSON.stringify(r));
  });

  test('read_docstring of a module in the tools dir', async () => {
    fs.writeFileSync(
      path.join(w.tools, 'mathhelp.py'),
      'def add(a, b):\n    """Add two numbers and return the sum."""\n    return a + b\n\n' +
        'def nodoc():\n    return 1\n',
    );
    const r = await callTool(client, 'read_docstring', { module: 'mathhelp', function: 'add' });
    assert.notEqual(r.isError, true, textOf(r));
    assert.equal(r.structuredContent.module, 'mathhelp');
    assert.equal(r.structuredContent.function, 'add');
    assert.match(r.structuredContent.docstring, /Add two numbers and return the sum\./);

    const missing = await callTool(client, 'read_docstring', { module: 'mathhelp', function: 'nosuch' });
    assert.equal(missing.isError, true, `missing function: ${JSON.stringify(missing)}`);
  });

  test('read_docstring refuses a module name that is a path', async () => {
    fs.writeFileSync(path.join(w.outside, 'evil.py'), 'def f():\n    """outside"""\n');
    // Refused either as bad arguments (-32602) or as a tool error; never read.
    const r = await callTool(client, 'read_docstring', { module: '../../outside/evil', function: 'f' }).catch((e) => e);
    assert.ok(r.code === -32602 || r.isError === true, JSON.stringify(r));
    assert.doesNotMatch(JSON.stringify(r), /"docstring":"outside/);
  });

  test('non-UTF-8 output comes back as valid JSON', async () => {
    const r = await callTool(client, 'execute_command', { command: "printf 'ok\\377\\376end'" });
    assert.notEqual(r.isError, true, textOf(r));
    assert.equal(r.structuredContent.exit_code, 0);
    assert.match(r.structuredContent.stdout, /^ok.*end$/s);
    assert.doesNotMatch(r.structuredContent.stdout, /^okend$/, 'the bad bytes are represented, not dropped silently');
  });

  test('huge output is truncated and the response stays bounded', async () => {
    const r = await callTool(client, 'execute_command', { command: "head -c 50000000 /dev/zero | tr '\\0' a" });
    assert.notEqual(r.isError, true, textOf(r));
    const s = r.structuredContent;
    assert.equal(s.truncated, true);
    assert.equal(s.exit_code, 0, 'the command was drained to completion, not killed');
    assert.ok(s.stdout.length > 0 && s.stdout.length <= OUTPUT_CAP, `stdout length ${s.stdout.length}`);
    assert.match(s.stdout.slice(0, 100), /^a+$/);
    const total = JSON.stringify(r).length;
    assert.ok(total < 4 * OUTPUT_CAP, `whole response is ${total} bytes`);
  });

  test('bad arguments are a tool error (2025-11-25), an unknown tool is -32602', async () => {
    // The SDK negotiates 2025-11-25, where input validation errors are results the model reads.
    const bad = await client.callTool({ name: 'execute_command', arguments: { timeout: 5 } });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /Invalid arguments for tool execute_command: .*command/);
    await assert.rejects(
      client.callTool({ name: 'no_such_tool', arguments: {} }),
      (err) => err.code === -32602,
    );
  });

  test("a client's own argument (Gemini CLI's wait_for_previous) is ignored with a notice", async () => {
    const r = await client.callTool({
      name: 'execute_command',
      arguments: { command: 'echo hi', wait_for_previous: true },
    });
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.equal(r.structuredContent.stdout, 'hi\n');
    assert.match(r.content.at(-1).text, /ignored the argument 'wait_for_previous'/);
    const wrongType = await client.callTool({
      name: 'execute_command',
      arguments: { command: 'echo hi', timeout: 'soon', wait_for_previous: true },
    });
    assert.equal(wrongType.isError, true, 'a known argument of the wrong type is still an error');
  });

  test('ping answers', async () => {
    assert.deepEqual(await client.ping(), {});
  });
});
