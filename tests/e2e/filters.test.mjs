// Filter plugins seen from the client: a denied command is a tool error naming filter and rule,
// and it never runs. Also the same config in MassGen's format.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { TOOLS, callTool, connectClient, makeWorkspace, nativeConfig, randomName, textOf, writeConfig } from './lib/harness.mjs';

describe('filters (sanitize + patterns)', () => {
  let w;
  let conn;

  before(async () => {
    w = makeWorkspace();
    conn = await connectClient(nativeConfig(w));
  });

  after(async () => {
    await conn?.close();
    w?.cleanup();
  });

  test('rm -rf / is blocked by sanitize, naming the filter and the rule', async () => {
    const r = await callTool(conn.client, 'execute_command', { command: 'rm -rf /' });
    assert.equal(r.isError, true, JSON.stringify(r));
    const s = r.structuredContent;
    assert.ok(s, 'a blocked call still has structuredContent');
    assert.equal(s.success, false);
    assert.equal(s.blocked_by, 'sanitize');
    assert.ok(typeof s.rule === 'string' && s.rule.length > 0, `rule: ${JSON.stringify(s.rule)}`);
    assert.match(textOf(r), /sanitize/);
  });

  test('a deny pattern blocks, naming patterns and the regex', async () => {
    const name = randomName('curl-ran');
    const r = await callTool(conn.client, 'execute_command', { command: `curl http://127.0.0.1:9/ ; touch ${name}` });
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.equal(r.structuredContent.blocked_by, 'patterns');
    assert.match(r.structuredContent.rule, /\^curl/);
    assert.match(textOf(r), /patterns/);
    assert.equal(fs.existsSync(path.join(w.ws, name)), false, 'a blocked command must not run');
  });

  test('a command the filters allow runs', async () => {
    const r = await callTool(conn.client, 'execute_command', { command: 'echo curl is fine here' });
    assert.notEqual(r.isError, true, textOf(r));
    assert.equal(r.structuredContent.stdout, 'curl is fine here\n');
  });
});

describe('filters see what runners, here-strings and expansions run (issue 7 item 12)', () => {
  let w;
  let conn;

  before(async () => {
    w = makeWorkspace();
    const filters =
      '    filters:\n' +
      '      - plugin: sanitize\n' +
      '      - plugin: patterns\n' +
      "        settings: {allow: ['^git ', '^find ', '^grep ', '^echo ', '^env ', '^sh']}\n";
    conn = await connectClient(nativeConfig(w, { filters }));
  });

  after(async () => {
    await conn?.close();
    w?.cleanup();
  });

  // Harmless payloads (chmod, touch in the workspace): if a filter missed one, nothing breaks.
  for (const command of [
    "env -S 'chmod 600 x'",
    "sh <<< 'chmod 600 x'",
    "echo 'chmod 600 x' | sh",
    "find . -maxdepth 0 -exec chmod 600 {} \\;",
    'echo ${M:-x} && chmod 600 {x,y}',
  ]) {
    test(`sanitize blocks: ${command}`, async () => {
      const r = await callTool(conn.client, 'execute_command', { command });
      assert.equal(r.isError, true, JSON.stringify(r));
      assert.equal(r.structuredContent.blocked_by, 'sanitize');
      assert.equal(r.structuredContent.rule, 'chmod');
    });
  }

  test("an allowed git does not carry what its alias runs, and it never runs", async () => {
    const name = randomName('alias-ran');
    const r = await callTool(conn.client, 'execute_command', { command: `git -c alias.x='!touch ${name}' x` });
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.equal(r.structuredContent.blocked_by, 'patterns');
    assert.equal(r.structuredContent.rule, 'allow-list');
    assert.match(textOf(r), new RegExp(`'touch ${name}' \\(run by git\\)`));
    assert.equal(fs.existsSync(path.join(w.ws, name)), false, 'a blocked command must not run');
  });

  test('find -exec of a program not on the list is denied', async () => {
    const name = randomName('find-ran');
    const r = await callTool(conn.client, 'execute_command', { command: `find . -maxdepth 0 -exec touch ${name} \\;` });
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.match(textOf(r), /\(run by find\)/);
    assert.equal(fs.existsSync(path.join(w.ws, name)), false, 'a blocked command must not run');
  });

  test('find -exec of an allowed program runs', async () => {
    fs.writeFileSync(path.join(w.ws, 'hit.txt'), 'foo\n');
    const r = await callTool(conn.client, 'execute_command', {
      command: "find . -maxdepth 1 -name 'hit.txt' -exec grep -l foo {} +",
    });
    assert.notEqual(r.isError, true, textOf(r));
    assert.equal(r.structuredContent.stdout, './hit.txt\n');
  });
});

describe('MassGen-format config', () => {
  let w;
  let conn;

  before(async () => {
    w = makeWorkspace();
    const file = writeConfig(
      w,
      'agents:\n' +
        '  - id: default\n' +
        '    backend:\n' +
        '      type: openai\n' +
        '      model: x\n' +
        `      cwd: ${JSON.stringify(w.ws)}\n` +
        '      enable_mcp_command_line: true\n' +
        '      command_line_execution_mode: local\n' +
        '      command_line_blocked_commands: ["^curl"]\n',
      'massgen.yaml',
    );
    conn = await connectClient(file);
  });

  after(async () => {
    await conn?.close();
    w?.cleanup();
  });

  test('serves the tools', async () => {
    const { tools } = await conn.client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
  });

  test('runs commands in the configured cwd', async () => {
    const r = await callTool(conn.client, 'execute_command', { command: 'echo hi && pwd' });
    assert.notEqual(r.isError, true, textOf(r));
    assert.equal(r.structuredContent.stdout, `hi\n${w.ws}\n`);
  });

  test('command_line_blocked_commands blocks', async () => {
    const r = await callTool(conn.client, 'execute_command', { command: 'curl http://127.0.0.1:9/' });
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.ok(r.structuredContent?.blocked_by, `blocked_by: ${JSON.stringify(r.structuredContent)}`);
  });
});

describe('config variable expansion', () => {
  let w;
  let conn;

  before(async () => {
    w = makeWorkspace();
    const file = writeConfig(
      w,
      'execmcp: 1\n' +
        'agents:\n' +
        '  - id: default\n' +
        '    cwd: "${EXECMCP_E2E_WS:-/nonexistent/unset}"\n' +
        '    backend: {plugin: local, settings: {}}\n' +
        '    filters: [{plugin: sanitize}]\n',
      'expand.yaml',
    );
    conn = await connectClient(file, { env: { EXECMCP_E2E_WS: w.ws } });
  });

  after(async () => {
    await conn?.close();
    w?.cleanup();
  });

  test('${VAR:-default} takes the variable from the server environment', async () => {
    const r = await callTool(conn.client, 'execute_command', { command: 'pwd' });
    assert.notEqual(r.isError, true, textOf(r));
    assert.equal(r.structuredContent.stdout.trim(), w.ws);
  });
});
