// MCP tasks (2025-11-25, experimental) end to end, over raw JSON-RPC on stdio and Streamable HTTP
// against the real server with the local backend: polling to completion, tasks/result blocking,
// tasks/cancel ending the whole tree, owner isolation between tokens, the per-principal cap, a
// task outliving the HTTP connection that made it, and a command several times longer than the
// SDK client's request timeout polled to completion over HTTP.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {
  RawServer,
  connectClient,
  killMarker,
  makeWorkspace,
  nativeConfig,
  processesWith,
  sleep,
  uniqueMarker,
  waitForMarker,
  waitMarkerGone,
} from './lib/harness.mjs';
import { httpSupport, newToken, rawPost, rawSession, sharedConfig, startHttpServer } from './lib/http.mjs';

const REV = '2025-11-25';
const RELATED = 'io.modelcontextprotocol/related-task';
const TASK_ID_RE = /^[0-9a-f]{32}$/;
const RFC3339_RE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

function checkTask(task, status) {
  assert.match(task.taskId, TASK_ID_RE, JSON.stringify(task));
  if (status) assert.equal(task.status, status, JSON.stringify(task));
  assert.match(task.createdAt, RFC3339_RE);
  assert.match(task.lastUpdatedAt, RFC3339_RE);
  assert.equal(typeof task.ttl, 'number');
  assert.ok(task.pollInterval > 0);
}

// The issue's long run: a command much longer than the client's request timeout, through the
// official SDK 1.x client over HTTP, polled to completion, no request held open longer than that
// timeout. mcp_e2e runs serially in CI (RUN_SERIAL, one file at a time), so its seconds add to
// the CI's wall time: the default is the issue's 90 s with a 20 s timeout at half scale, 45 s with
// 10 s (the command still outlasts 4.5 request timeouts; the client polls it some 40 times);
// EXECMCP_E2E_TASK_SECONDS=90 runs the full length (the timeout scales with it). It starts before
// this file's other tests and is checked after them, so they overlap it.
const http = httpSupport();
const LONG_SECONDS = Number(process.env.EXECMCP_E2E_TASK_SECONDS || 45);
const LONG_TIMEOUT_MS = Math.round((LONG_SECONDS * 1000 * 2) / 9);
let longRun;

async function runLongTask() {
  const w = makeWorkspace();
  const token = newToken();
  const file = sharedConfig(w, { agents: ['long'], tokens: [{ name: 'poller', token, agents: ['long'] }] });
  const server = await startHttpServer(file);
  // Every request the client sends, from sending it to the end of its response body.
  const requests = [];
  const timedFetch = async (url, init) => {
    const started = Date.now();
    let method = init?.method ?? 'GET';
    try {
      method = JSON.parse(init.body).method ?? 'response';
    } catch {
      // not a JSON-RPC body (GET, DELETE)
    }
    const res = await fetch(url, init);
    const entry = { method, status: res.status, ms: undefined };
    requests.push(entry);
    // A tee of the body: it ends when the server stopped holding the request open.
    res.clone().arrayBuffer().then(
      () => (entry.ms = Date.now() - started),
      () => (entry.ms = Date.now() - started),
    );
    return res;
  };
  const client = new Client({ name: 'execmcp-e2e-long', version: '1.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(server.url('long')), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: timedFetch,
  });
  try {
    await client.connect(transport);
    await client.listTools();  // callToolStream asks for a task only when the tool says optional
    const statuses = [];
    let result;
    const started = Date.now();
    const stream = client.experimental.tasks.callToolStream(
      {
        name: 'execute_command',
        arguments: { command: `for i in $(seq ${LONG_SECONDS}); do echo tick$i; sleep 1; done`, timeout: LONG_SECONDS + 60 },
      },
      undefined,
      { timeout: LONG_TIMEOUT_MS },
    );
    for await (const message of stream) {
      if (message.type === 'error') throw message.error;
      if (message.type === 'taskCreated') statuses.push({ at: Date.now() - started, status: 'created' });
      if (message.type === 'taskStatus')
        statuses.push({ at: Date.now() - started, status: message.task.status, statusMessage: message.task.statusMessage });
      if (message.type === 'result') result = message.result;
    }
    const elapsed = Date.now() - started;
    await sleep(200);  // the tees of the last bodies settle
    return { statuses, result, elapsed, requests };
  } finally {
    await client.close().catch(() => {});
    await server.stop();
    w.cleanup();
  }
}

// An expired task is gone: a task that ends at once is kept at least 60 s after its end (its
// reported ttl says until when), then tasks/get says it expired and tasks/list no longer has it.
// Started with the long run and checked after it, so the minute overlaps the rest of the file.
let expiry;

async function runExpiry() {
  const w = makeWorkspace();
  const token = newToken();
  const file = sharedConfig(w, { agents: ['exp'], tokens: [{ name: 'expirer', token, agents: ['exp'] }] });
  const server = await startHttpServer(file);
  try {
    const s = await rawSession(server.url('exp'), token, REV, 'tasks-expiry');
    const created = await s.call('tools/call', { name: 'execute_command', arguments: { command: 'echo soon-gone' }, task: { ttl: 1 } });
    const { taskId } = created.result.task;
    let before;
    for (let i = 0; i < 100; i += 1) {
      before = (await s.call('tasks/get', { taskId })).result;
      if (before.status !== 'working') break;
      await sleep(50);
    }
    // Once it has ended, its ttl (from createdAt) says the real moment it goes.
    const { ttl } = before;
    const kept = (await s.call('tasks/list', {})).result.tasks.map((t) => t.taskId);
    // Polled once a second until it is gone (at most 15 s past that moment).
    const deadline = Date.parse(before.createdAt) + ttl + 15000;
    let after;
    while (Date.now() < deadline) {
      after = await s.call('tasks/get', { taskId });
      if (after.error) break;
      await sleep(1000);
    }
    const listed = (await s.call('tasks/list', {})).result.tasks.map((t) => t.taskId);
    const result = await s.call('tasks/result', { taskId });
    return { taskId, ttl, before, kept, after, listed, result };
  } finally {
    await server.stop();
    w.cleanup();
  }
}

before(() => {
  if (!http.ok) return;
  longRun = runLongTask();
  longRun.catch(() => {});  // awaited (and reported) by the last test
  expiry = runExpiry();
  expiry.catch(() => {});
});

describe('MCP tasks over stdio (2025-11-25)', () => {
  let w;
  let config;
  const servers = [];
  const markers = [];
  let nextId = 1;

  function start() {
    return startWith([]);
  }
  function startWith(args) {
    const s = new RawServer(config, { args });
    servers.push(s);
    return s;
  }
  async function request(s, method, params) {
    const id = `r${nextId++}`;
    s.send({ jsonrpc: '2.0', id, method, params });
    return (await s.response(id)).msg;
  }
  async function createTask(s, command, task = {}, extra = {}) {
    const msg = await request(s, 'tools/call', { name: 'execute_command', arguments: { command }, task, ...extra });
    assert.ok(msg.result?.task, JSON.stringify(msg));
    checkTask(msg.result.task, 'working');
    return msg.result.task;
  }

  before(() => {
    w = makeWorkspace();
    config = nativeConfig(w, { filters: 'none' });
  });
  after(() => {
    for (const s of servers) s.kill();
    for (const m of markers) killMarker(m);
    w?.cleanup();
  });

  test('2025-11-25 advertises tasks; older revisions neither advertise nor serve them', async () => {
    const s = start();
    const init = await s.initialize(REV);
    assert.deepEqual(init.result.capabilities.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = (await request(s, 'tools/list', {})).result;
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.deepEqual(byName.execute_command.execution, { taskSupport: 'optional' });
    assert.equal(byName.read_file.execution, undefined, 'file tools answer at once (forbidden)');

    const old = start();
    const oldInit = await old.initialize('2025-06-18');
    assert.equal(oldInit.result.capabilities.tasks, undefined);
    const oldTools = (await request(old, 'tools/list', {})).result.tools;
    assert.ok(oldTools.every((t) => t.execution === undefined));
    for (const method of ['tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel']) {
      const msg = await request(old, method, { taskId: 'x' });
      assert.equal(msg.error?.code, -32601, `${method}: ${JSON.stringify(msg)}`);
    }
    // A 2025-06-18 client's `task` is not a task: the call is answered as today.
    const plain = await request(old, 'tools/call', { name: 'execute_command', arguments: { command: 'echo plain' }, task: {} });
    assert.match(plain.result.content[0].text, /plain/);
    assert.equal(plain.result.task, undefined);
  });

  test('a task runs to completion through polling; status notifications and tasks/result', async () => {
    const s = start();
    await s.initialize(REV);
    // Without a task the call is answered directly, as before.
    const plain = await request(s, 'tools/call', { name: 'execute_command', arguments: { command: 'echo direct' } });
    assert.match(plain.result.content[0].text, /direct/);
    const started = Date.now();
    const task = await createTask(s, 'echo first; sleep 2; echo task-finished', { ttl: 60000 }, { _meta: { progressToken: 'p1' } });
    assert.ok(Date.now() - started < 1500, 'CreateTaskResult comes at once');
    let polls = 0;
    let last;
    for (;;) {
      last = (await request(s, 'tasks/get', { taskId: task.taskId })).result;
      checkTask(last);
      polls += 1;
      if (last.status !== 'working') break;
      assert.match(last.statusMessage ?? '', /running|waiting/);
      await sleep(Math.min(last.pollInterval, 500));
    }
    assert.equal(last.status, 'completed', JSON.stringify(last));
    assert.match(last.statusMessage, /exit code 0/);
    assert.ok(polls >= 2, `polled ${polls} times`);
    const result = await request(s, 'tasks/result', { taskId: task.taskId });
    assert.match(result.result.content[0].text, /task-finished/);
    assert.equal(result.result.structuredContent.exit_code, 0);
    assert.deepEqual(result.result._meta[RELATED], { taskId: task.taskId });
    const { msg: note } = await s.waitFor(
      (m) => m.method === 'notifications/tasks/status' && m.params?.taskId === task.taskId && m.params.status === 'completed',
      5000,
      'the completed status notification',
    );
    checkTask(note.params, 'completed');
    const { msg: progress } = await s.waitFor((m) => m.method === 'notifications/progress' && m.params?.progressToken === 'p1', 5000, 'task progress');
    assert.deepEqual(progress.params._meta[RELATED], { taskId: task.taskId });
    const list = (await request(s, 'tasks/list', {})).result;
    assert.ok(list.tasks.some((t) => t.taskId === task.taskId));
  });

  test('tasks/result blocks until the task ends', async () => {
    const s = start();
    await s.initialize(REV);
    const task = await createTask(s, 'sleep 1; echo waited-for');
    const started = Date.now();
    const result = await request(s, 'tasks/result', { taskId: task.taskId });
    assert.ok(Date.now() - started >= 500, 'answered only once the command ended');
    assert.match(result.result.content[0].text, /waited-for/);
  });

  test('tasks/cancel kills the whole process tree within a second', async () => {
    const s = start();
    await s.initialize(REV);
    const marker = uniqueMarker();
    markers.push(marker);
    // Both sleeps carry the marker in their argv (as lifecycle.test.mjs's tree).
    const task = await createTask(s, `sh -c 'sleep 1000.${marker} & sleep 1000.${marker}; wait' tree-${marker}`);
    assert.ok((await waitForMarker(marker)).length > 0, 'the tree started');
    const cancelled = await request(s, 'tasks/cancel', { taskId: task.taskId });
    checkTask(cancelled.result, 'cancelled');
    const t0 = Date.now();
    const left = await waitMarkerGone(marker, 1000);
    assert.deepEqual(left, [], `still running ${Date.now() - t0} ms after tasks/cancel`);
    const again = await request(s, 'tasks/cancel', { taskId: task.taskId });
    assert.equal(again.error?.code, -32602, JSON.stringify(again));
    const got = (await request(s, 'tasks/get', { taskId: task.taskId })).result;
    assert.equal(got.status, 'cancelled');
    // The killed command's result, as the call would have answered it.
    const result = await request(s, 'tasks/result', { taskId: task.taskId });
    assert.deepEqual(result.result?._meta?.[RELATED], { taskId: task.taskId }, JSON.stringify(result));
  });

  test('audit: a task\'s command has one record with the principal and the task; creation and cancel have theirs', async () => {
    const auditFile = path.join(w.root, 'tasks-audit.jsonl');
    const s = startWith(['--audit-file', auditFile]);
    await s.initialize(REV);
    const done = await createTask(s, 'echo audited-task');
    await request(s, 'tasks/result', { taskId: done.taskId });
    const marker = uniqueMarker();
    markers.push(marker);
    const cancelled = await createTask(s, `sleep 30.${marker}`);
    assert.ok((await waitForMarker(marker)).length > 0, 'the command started');
    await request(s, 'tasks/cancel', { taskId: cancelled.taskId });
    await request(s, 'tasks/result', { taskId: cancelled.taskId });
    await request(s, 'tools/call', { name: 'execute_command', arguments: { command: 'echo plain-call' } });
    const ref = (id) => `t-${createHash('sha256').update(id).digest('hex').slice(0, 16)}`;
    const text = fs.readFileSync(auditFile, 'utf8');
    for (const id of [done.taskId, cancelled.taskId]) assert.ok(!text.includes(id), 'a task id in the audit trail');
    const records = text.trim().split('\n').map((l) => JSON.parse(l));
    const of = (task) => records.filter((r) => r.task === task);
    // The finished task: its creation, then its command's one record (the call's, with the task).
    const finished = of(ref(done.taskId));
    assert.deepEqual(finished.map((r) => r.verdict).sort(), ['allowed', 'task:created'], JSON.stringify(finished));
    for (const r of finished) {
      assert.equal(r.principal, 'stdio');
      assert.equal(r.tool, 'execute_command');
      assert.equal(r.command, 'echo audited-task');
    }
    assert.equal(finished.find((r) => r.verdict === 'allowed').exit_code, 0);
    const killed = of(ref(cancelled.taskId));
    assert.deepEqual(killed.map((r) => r.verdict).sort(), ['allowed', 'task:cancelled', 'task:created'], JSON.stringify(killed));
    assert.ok(killed.every((r) => r.principal === 'stdio'));
    assert.equal(killed.find((r) => r.verdict === 'allowed').cancelled, true);
    const plain = records.filter((r) => r.command === 'echo plain-call');
    assert.equal(plain.length, 1);
    assert.equal(plain[0].task, undefined, 'a plain call names no task');
  });

  test('errors: unknown task, a task on a tool that forbids it, the per-principal cap', async () => {
    const s = startWith(['--max-tasks-per-principal', '2']);
    await s.initialize(REV);
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      const msg = await request(s, method, { taskId: '0'.repeat(32) });
      assert.equal(msg.error?.code, -32602, JSON.stringify(msg));
      assert.match(msg.error.message, /Task not found/);
    }
    const forbidden = await request(s, 'tools/call', { name: 'read_file', arguments: { path: 'x' }, task: {} });
    assert.equal(forbidden.error?.code, -32601, JSON.stringify(forbidden));
    const marker = uniqueMarker();
    markers.push(marker);
    const a = await createTask(s, `sleep 30.${marker}`);
    const b = await createTask(s, `sleep 30.${marker}`);
    const third = await request(s, 'tools/call', { name: 'execute_command', arguments: { command: 'true' }, task: {} });
    assert.equal(third.error?.code, -32000, JSON.stringify(third));
    assert.equal(third.error.data.limit, 'tasks');
    assert.match(third.error.message, /--max-tasks-per-principal/);
    for (const t of [a, b]) await request(s, 'tasks/cancel', { taskId: t.taskId });
    // tasks/result answers once the work has ended: the trees are gone by then (a cancel may
    // come before a tree has even started, so /proc alone proves nothing here).
    for (const t of [a, b]) await request(s, 'tasks/result', { taskId: t.taskId });
    assert.deepEqual(processesWith(marker), []);
  });
});

describe('MCP tasks through the official SDK 1.x client (experimental tasks API)', () => {
  let w;
  let conn;

  before(async () => {
    w = makeWorkspace();
    conn = await connectClient(nativeConfig(w, { filters: 'none' }));
  });
  after(async () => {
    await conn?.close();
    w?.cleanup();
  });

  test('callToolStream polls a command longer than its request timeout to completion', async () => {
    const tools = await conn.client.listTools();
    assert.equal(tools.tools.find((t) => t.name === 'execute_command').execution?.taskSupport, 'optional');
    const seen = [];
    let result;
    const started = Date.now();
    // Each request may take 1.5 s at most; the command takes 3 s: only polling gets it.
    const stream = conn.client.experimental.tasks.callToolStream(
      { name: 'execute_command', arguments: { command: 'for i in 1 2 3; do echo tick$i; sleep 1; done' } },
      undefined,
      { timeout: 1500 },
    );
    for await (const message of stream) {
      seen.push(message.type === 'taskStatus' ? `${message.type}:${message.task.status}` : message.type);
      if (message.type === 'error') throw message.error;
      if (message.type === 'result') result = message.result;
    }
    assert.ok(Date.now() - started >= 2500);
    assert.equal(seen[0], 'taskCreated', seen.join(' '));
    assert.ok(seen.includes('taskStatus:working'), seen.join(' '));
    assert.equal(seen.at(-1), 'result');
    assert.match(result.content[0].text, /tick3/);
    assert.equal(result.structuredContent.exit_code, 0);
  });
});

const REV2026 = '2026-07-28';
const EXT = 'io.modelcontextprotocol/tasks';
function meta2026({ tasks = true } = {}) {
  return {
    'io.modelcontextprotocol/protocolVersion': REV2026,
    'io.modelcontextprotocol/clientInfo': { name: 'tasks-e2e', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': tasks ? { extensions: { [EXT]: {} } } : {},
  };
}

function checkExtensionTask(task, status) {
  assert.match(task.taskId, TASK_ID_RE, JSON.stringify(task));
  if (status) assert.equal(task.status, status, JSON.stringify(task));
  assert.match(task.createdAt, RFC3339_RE);
  assert.ok(Number.isInteger(task.ttlMs) && task.ttlMs > 0, JSON.stringify(task));
  assert.ok(Number.isInteger(task.pollIntervalMs) && task.pollIntervalMs > 0);
  assert.equal(task.ttl, undefined, 'no 2025 ttl key');
  assert.equal(task.pollInterval, undefined, 'no 2025 pollInterval key');
}

describe('MCP tasks extension over stdio (2026-07-28)', () => {
  let w;
  let s;
  let nextId = 1;
  async function request(method, params, options) {
    const id = `e${nextId++}`;
    s.send({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta2026(options) } });
    return (await s.response(id)).msg;
  }

  before(() => {
    w = makeWorkspace();
    // A short window, so the test stays quick: commands past 300 ms become tasks.
    s = new RawServer(nativeConfig(w, { filters: 'none' }), {
      args: ['--task-after', '300', '--audit-file', path.join(w.root, 'audit-2026.jsonl')],
    });
  });
  after(() => {
    s?.kill();
    w?.cleanup();
  });

  test('discover lists the extension; a declaring client polls a command to its inlined result', async () => {
    const discover = await request('server/discover', {});
    assert.deepEqual(discover.result.capabilities.extensions, { [EXT]: {} });
    assert.equal(discover.result.capabilities.tasks, undefined, 'no 2025 tasks slot');
    // A command that ends within the window is answered as a plain call.
    const quick = (await request('tools/call', { name: 'execute_command', arguments: { command: 'echo quick' } })).result;
    assert.equal(quick.resultType, 'complete', JSON.stringify(quick));
    assert.match(quick.content[0].text, /quick/);
    const created = (await request('tools/call', { name: 'execute_command', arguments: { command: 'sleep 1; echo ext-done; exit 3' } })).result;
    assert.equal(created.resultType, 'task', JSON.stringify(created));
    checkExtensionTask(created, 'working');
    let got;
    for (let i = 0; i < 40; i += 1) {
      got = (await request('tasks/get', { taskId: created.taskId })).result;
      assert.equal(got.resultType, 'complete');
      checkExtensionTask(got);
      if (got.status !== 'working') break;
      await sleep(Math.min(got.pollIntervalMs, 300));
    }
    assert.equal(got.status, 'completed', JSON.stringify(got));
    assert.match(got.result.content[0].text, /ext-done/);
    assert.equal(got.result.structuredContent.exit_code, 3);
    assert.equal(got.result._meta, undefined, 'no related-task _meta on an inlined result');
    // The file tools answer at once; the legacy task param is ignored.
    const file = (await request('tools/call', { name: 'write_file', arguments: { path: 'f.txt', content: 'x' }, task: {} })).result;
    assert.equal(file.resultType, 'complete', JSON.stringify(file));
    // update: acknowledged for a known task; cancel: an empty ack, also for a task that ended.
    const update = await request('tasks/update', { taskId: created.taskId, inputResponses: {} });
    assert.deepEqual(Object.keys(update.result).sort(), ['_meta', 'resultType']);
    const cancel = await request('tasks/cancel', { taskId: created.taskId });
    assert.equal(cancel.result.resultType, 'complete');
    assert.equal(cancel.result.status, undefined);
    assert.equal(cancel.result.taskId, undefined);
    const unknown = await request('tasks/get', { taskId: '0'.repeat(32) });
    assert.equal(unknown.error?.code, -32602, JSON.stringify(unknown));
  });

  test('without the extension: calls are answered directly, tasks/* are -32021; result and list are gone', async () => {
    const plain = (await request('tools/call', { name: 'execute_command', arguments: { command: 'echo direct' } }, { tasks: false })).result;
    assert.equal(plain.resultType, 'complete');
    assert.match(plain.content[0].text, /direct/);
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const msg = await request(method, { taskId: '0'.repeat(32) }, { tasks: false });
      assert.equal(msg.error?.code, -32021, `${method}: ${JSON.stringify(msg)}`);
      assert.deepEqual(msg.error.data.requiredCapabilities.extensions, { [EXT]: {} });
    }
    for (const method of ['tasks/result', 'tasks/list']) {
      const msg = await request(method, { taskId: '0'.repeat(32) });
      assert.equal(msg.error?.code, -32601, `${method}: ${JSON.stringify(msg)}`);
    }
  });

  test('audit: a command answered within the window has no task:created; one made a task has', async () => {
    const records = fs
      .readFileSync(path.join(w.root, 'audit-2026.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    // Answered within --task-after: a call to the client, so no task:created; its command ran on
    // the task runner all the same, and its one record says as which task.
    const quick = records.filter((r) => r.command === 'echo quick');
    assert.equal(quick.length, 1, JSON.stringify(quick));
    assert.equal(quick[0].verdict, 'allowed');
    assert.match(quick[0].task, /^t-[0-9a-f]{16}$/);
    assert.ok(!records.some((r) => r.verdict === 'task:created' && r.task === quick[0].task));
    const long = records.filter((r) => r.command === 'sleep 1; echo ext-done; exit 3');
    assert.deepEqual(long.map((r) => r.verdict).sort(), ['allowed', 'task:created'], JSON.stringify(long));
    assert.match(long[0].task, /^t-[0-9a-f]{16}$/);
    assert.equal(long[0].task, long[1].task);
    assert.ok(long.every((r) => r.principal === 'stdio'));
    assert.ok(records.every((r) => r.verdict !== 'task:cancelled' || r.task !== long[0].task), 'cancel of an ended task is no event');
  });

  test('tasks/cancel ends the tree; the task reads cancelled', async () => {
    const marker = uniqueMarker();
    try {
      const created = (await request('tools/call', {
        name: 'execute_command',
        arguments: { command: `sh -c 'sleep 1000.${marker} & sleep 1000.${marker}; wait' tree-${marker}` },
      })).result;
      assert.ok((await waitForMarker(marker)).length > 0, 'the tree started');
      await request('tasks/cancel', { taskId: created.taskId });
      assert.deepEqual(await waitMarkerGone(marker, 1000), []);
      const got = (await request('tasks/get', { taskId: created.taskId })).result;
      assert.equal(got.status, 'cancelled');
    } finally {
      killMarker(marker);
    }
  });
});


// POSTs `body` on a connection of its own (no keep-alive pool) and closes it once the response
// has been read; resolves when the socket is closed, with { status, text, json } (the last SSE
// event's message for an SSE answer).
function postOnOwnConnection(url, body, headers) {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'content-length': Buffer.byteLength(data),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', async () => {
          res.socket.destroy();
          await closed;
          const events = text.split('\n').filter((l) => l.startsWith('data: '));
          let json;
          try {
            json = JSON.parse(events.length > 0 ? events.at(-1).slice(6) : text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode, text, json });
        });
      },
    );
    const closed = new Promise((r) => req.on('socket', (socket) => socket.once('close', r)));
    req.on('error', reject);
    req.end(data);
  });
}

describe('2026-07-28: within its --task-after window a command is still a call; cancelling it ends its tree', () => {
  let w;
  let s;
  let server;
  const token = newToken();
  const markers = [];
  const treeOf = (marker) => `sh -c 'sleep 1000.${marker} & sleep 1000.${marker}; wait' tree-${marker}`;

  before(async () => {
    w = makeWorkspace();
    // A window far longer than the test: the call never becomes a task here.
    s = new RawServer(nativeConfig(w, { filters: 'none' }), { args: ['--task-after', '20000'] });
    if (http.ok) {
      const file = sharedConfig(w, { agents: ['win'], tokens: [{ name: 'win', token, agents: ['win'] }] });
      server = await startHttpServer(file, { args: ['--task-after', '20000'] });
    }
  });
  after(async () => {
    s?.kill();
    await server?.stop();
    for (const m of markers) killMarker(m);
    w?.cleanup();
  });

  test('stdio: notifications/cancelled', async () => {
    const marker = uniqueMarker();
    markers.push(marker);
    s.send({
      jsonrpc: '2.0',
      id: 'win1',
      method: 'tools/call',
      params: { name: 'execute_command', arguments: { command: treeOf(marker) }, _meta: meta2026() },
    });
    assert.ok((await waitForMarker(marker)).length > 0, 'the tree started');
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'win1', _meta: meta2026() } });
    assert.deepEqual(await waitMarkerGone(marker, 1000), [], 'the tree outlived the cancel');
    await sleep(300);
    assert.ok(!s.messages.some((m) => m.id === 'win1'), 'a cancelled request gets no answer');
  });

  test('HTTP: the client closes the stream', { skip: http.ok ? false : http.why }, async () => {
    const marker = uniqueMarker();
    markers.push(marker);
    const data = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'execute_command', arguments: { command: treeOf(marker) }, _meta: meta2026() },
    });
    const req = httpRequest(server.url('win'), {
      method: 'POST',
      agent: false,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'content-length': Buffer.byteLength(data),
        authorization: `Bearer ${token}`,
        'mcp-protocol-version': REV2026,
        'mcp-method': 'tools/call',
        'mcp-name': 'execute_command',
      },
    });
    req.on('error', () => {});  // destroyed below
    req.end(data);
    assert.ok((await waitForMarker(marker)).length > 0, 'the tree started');
    req.destroy();
    assert.deepEqual(await waitMarkerGone(marker, 1000), [], 'the tree outlived the closed stream');
  });
});

describe('MCP tasks over Streamable HTTP (2025-11-25)', { skip: http.ok ? false : http.why }, () => {
  let w;
  let server;
  const tokA = newToken();
  const tokB = newToken();

  const session = (token) => rawSession(server.url('alpha'), token, REV, 'tasks-e2e');

  before(async () => {
    w = makeWorkspace();
    const file = sharedConfig(w, {
      agents: ['alpha'],
      tokens: [
        { name: 'alice', token: tokA, agents: ['alpha'] },
        { name: 'bob', token: tokB, agents: ['alpha'] },
      ],
    });
    // --task-after 0: a 2026-07-28 command declaring the extension is always a task here.
    server = await startHttpServer(file, { args: ['--max-tasks-per-principal', '2', '--task-after', '0'] });
  });
  after(async () => {
    await server?.stop();
    w?.cleanup();
  });

  test("tasks/result streams the task's progress and status on its own answer, then the result", async () => {
    const alice = await session(tokA);
    const created = await alice.call('tools/call', {
      name: 'execute_command',
      arguments: { command: 'echo one; sleep 2; echo two; sleep 1' },
      task: { ttl: 120000 },
      _meta: { progressToken: 'http-progress' },
    });
    const { taskId } = created.result.task;
    // The creating POST answered at once: nothing of the task could come on it.
    const res = await rawPost(server.url('alpha'), { jsonrpc: '2.0', id: 99, method: 'tasks/result', params: { taskId } }, {
      token: tokA,
      headers: { 'mcp-session-id': alice.sid, 'mcp-protocol-version': REV },
    });
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const messages = res.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
    const progress = messages.filter((m) => m.method === 'notifications/progress');
    assert.ok(progress.length > 0, `no progress on the tasks/result stream: ${res.text}`);
    for (const m of progress) {
      assert.equal(m.params.progressToken, 'http-progress');
      assert.deepEqual(m.params._meta[RELATED], { taskId });
    }
    const last = messages.at(-1);
    assert.equal(last.id, 99);
    assert.match(last.result.content[0].text, /one[\s\S]*two/);
    assert.deepEqual(last.result._meta[RELATED], { taskId });
    // Every notification came before the answer, none after it.
    assert.ok(messages.slice(0, -1).every((m) => m.method !== undefined));
  });

  test('a task outlives its session and is its principal\'s alone', async () => {
    const alice = await session(tokA);
    assert.ok(alice.init.result.capabilities.tasks.list, 'list offered: callers are authenticated');
    const created = await alice.call('tools/call', { name: 'execute_command', arguments: { command: 'sleep 1; echo over-http' }, task: { ttl: 120000 } });
    const { task } = created.result;
    checkTask(task, 'working');

    const bob = await session(tokB);
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      const msg = await bob.call(method, { taskId: task.taskId });
      assert.equal(msg.error?.code, -32602, `${method}: ${JSON.stringify(msg)}`);
      assert.match(msg.error.message, /Task not found/);
    }
    assert.deepEqual((await bob.call('tasks/list', {})).result.tasks, []);

    // A new session of the same principal reaches it, and polls it to the end.
    const again = await session(tokA);
    assert.ok((await again.call('tasks/list', {})).result.tasks.some((t) => t.taskId === task.taskId));
    let got;
    for (let i = 0; i < 40; i += 1) {
      got = (await again.call('tasks/get', { taskId: task.taskId })).result;
      if (got.status !== 'working') break;
      await sleep(250);
    }
    assert.equal(got.status, 'completed', JSON.stringify(got));
    const result = await again.call('tasks/result', { taskId: task.taskId });
    assert.match(result.result.content[0].text, /over-http/);
    assert.deepEqual(result.result._meta[RELATED], { taskId: task.taskId });
  });

  test('2026-07-28 extension over HTTP: Mcp-Name must be the taskId; another token finds nothing', async () => {
    const post = (token, method, params, name) =>
      rawPost(server.url('alpha'), { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: meta2026() } }, {
        token,
        headers: { 'mcp-protocol-version': REV2026, 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) },
      });
    const created = await post(tokA, 'tools/call', { name: 'execute_command', arguments: { command: 'echo ext-http' } }, 'execute_command');
    assert.equal(created.status, 200, created.text);
    checkExtensionTask(created.json.result, 'working');
    const { taskId } = created.json.result;
    const wrongName = await post(tokA, 'tasks/get', { taskId }, 'execute_command');
    assert.equal(wrongName.status, 400, wrongName.text);
    assert.equal(wrongName.json.error.code, -32020);
    const foreign = await post(tokB, 'tasks/get', { taskId }, taskId);
    assert.equal(foreign.json.error?.code, -32602, foreign.text);
    let got;
    for (let i = 0; i < 40; i += 1) {
      got = (await post(tokA, 'tasks/get', { taskId }, taskId)).json.result;
      if (got.status !== 'working') break;
      await sleep(100);
    }
    assert.equal(got.status, 'completed', JSON.stringify(got));
    assert.match(got.result.content[0].text, /ext-http/);
    // The same task through the 2025-11-25 surface (one store serves both).
    const legacy = await session(tokA);
    const result = await legacy.call('tasks/result', { taskId });
    assert.match(result.result.content[0].text, /ext-http/);
  });

  test('a task outlives the HTTP connection that created it (2025-11-25 and 2026-07-28)', async () => {
    const alice = await session(tokA);
    const legacy = await postOnOwnConnection(
      server.url('alpha'),
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'execute_command', arguments: { command: 'sleep 2; echo outlived-2025' }, task: {} } },
      { authorization: `Bearer ${tokA}`, 'mcp-session-id': alice.sid, 'mcp-protocol-version': REV },
    );
    assert.equal(legacy.status, 200, legacy.text);
    const legacyTask = legacy.json.result.task;
    checkTask(legacyTask, 'working');
    const ext = await postOnOwnConnection(
      server.url('alpha'),
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'execute_command', arguments: { command: 'sleep 2; echo outlived-2026' }, _meta: meta2026() } },
      { authorization: `Bearer ${tokA}`, 'mcp-protocol-version': REV2026, 'mcp-method': 'tools/call', 'mcp-name': 'execute_command' },
    );
    assert.equal(ext.status, 200, ext.text);
    checkExtensionTask(ext.json.result, 'working');
    // Both connections are closed now (postOnOwnConnection waits for it); the commands run on.
    assert.equal((await alice.call('tasks/get', { taskId: legacyTask.taskId })).result.status, 'working');
    let got;
    for (let i = 0; i < 60; i += 1) {
      got = (await alice.call('tasks/get', { taskId: legacyTask.taskId })).result;
      if (got.status !== 'working') break;
      await sleep(100);
    }
    assert.equal(got.status, 'completed', JSON.stringify(got));
    assert.match((await alice.call('tasks/result', { taskId: legacyTask.taskId })).result.content[0].text, /outlived-2025/);
    const { taskId } = ext.json.result;
    for (let i = 0; i < 60; i += 1) {
      const res = await rawPost(server.url('alpha'), { jsonrpc: '2.0', id: 3, method: 'tasks/get', params: { taskId, _meta: meta2026() } }, {
        token: tokA,
        headers: { 'mcp-protocol-version': REV2026, 'mcp-method': 'tasks/get', 'mcp-name': taskId },
      });
      got = res.json.result;
      if (got.status !== 'working') break;
      await sleep(100);
    }
    assert.equal(got.status, 'completed', JSON.stringify(got));
    assert.match(got.result.content[0].text, /outlived-2026/);
  });

  test('the per-principal cap answers 429 with a clear error; another principal is not held back', async () => {
    const alice = await session(tokA);
    // Results of the tests before count: they end within a second but are kept 60 s.
    const marker = uniqueMarker();
    const ids = [];
    try {
      // Alice may hold one result from the test before: cancel what she has first.
      for (const t of (await alice.call('tasks/list', {})).result.tasks) ids.push(t.taskId);
      let refused;
      for (let i = 0; i < 3 && !refused; i += 1) {
        const msg = await alice.call('tools/call', { name: 'execute_command', arguments: { command: `sleep 30.${marker}` }, task: {} });
        if (msg.error) refused = msg;
        else ids.push(msg.result.task.taskId);
      }
      assert.ok(refused, 'a third live task is refused');
      assert.equal(refused.status, 429);
      assert.equal(refused.error.data.limit, 'tasks');
      const bob = await session(tokB);
      const own = await bob.call('tools/call', { name: 'execute_command', arguments: { command: `sleep 30.${marker}` }, task: {} });
      checkTask(own.result.task, 'working');
      await bob.call('tasks/cancel', { taskId: own.result.task.taskId });
      await bob.call('tasks/result', { taskId: own.result.task.taskId });
    } finally {
      for (const id of ids) await alice.call('tasks/cancel', { taskId: id });
      for (const id of ids) await alice.call('tasks/result', { taskId: id });
      assert.deepEqual(processesWith(marker), []);
      killMarker(marker);
    }
  });
});

test(`a ${LONG_SECONDS} s command through the SDK 1.x client (request timeout ${LONG_TIMEOUT_MS} ms) completes through polling over HTTP`, { skip: http.ok ? false : http.why }, async (t) => {
  const { statuses, result, elapsed, requests } = await longRun;
  assert.match(result.content[0].text, new RegExp(`tick${LONG_SECONDS}\\b`));
  assert.equal(result.structuredContent.exit_code, 0);
  assert.ok(elapsed >= LONG_SECONDS * 1000, `ended after ${elapsed} ms`);
  const posts = requests.filter((r) => r.method !== 'GET');
  assert.ok(posts.every((r) => r.ms !== undefined), JSON.stringify(posts));
  const longest = posts.reduce((a, r) => (r.ms > a.ms ? r : a));
  assert.ok(longest.ms < LONG_TIMEOUT_MS, `a request was held open ${JSON.stringify(longest)}`);
  const count = (method) => posts.filter((r) => r.method === method).length;
  assert.equal(count('tools/call'), 1);
  assert.equal(count('tasks/result'), 1);
  assert.ok(count('tasks/get') >= 5, `polled ${count('tasks/get')} times`);
  // While it ran, tasks/get said how much output there was so far.
  assert.ok(
    statuses.some((s) => s.status === 'working' && /^running \d+ s; stdout [1-9][0-9.]* (B|KiB)/.test(s.statusMessage ?? '')),
    JSON.stringify(statuses),
  );
  assert.equal(statuses.at(-1).status, 'completed');
  t.diagnostic(
    `${LONG_SECONDS} s command: ${count('tasks/get')} tasks/get polls over ${elapsed} ms; longest request ${longest.ms} ms ` +
      `(${longest.method}), client request timeout ${LONG_TIMEOUT_MS} ms; statuses: ` +
      statuses.map((s) => `${s.at}ms ${s.status}${s.statusMessage ? ` (${s.statusMessage})` : ''}`).join(' | '),
  );
});

test('an expired task is gone: tasks/get says so, tasks/list and tasks/result no longer have it', { skip: http.ok ? false : http.why }, async () => {
  const { taskId, ttl, before, kept, after, listed, result } = await expiry;
  assert.ok(ttl >= 60000, `a task is kept at least 60 s after its end (ttl ${ttl})`);
  assert.equal(before.status, 'completed', JSON.stringify(before));
  assert.ok(kept.includes(taskId));
  assert.equal(after?.error?.code, -32602, JSON.stringify(after));
  assert.match(after.error.message, /Task has expired|Task not found/);
  assert.ok(!listed.includes(taskId), JSON.stringify(listed));
  assert.equal(result.error?.code, -32602, JSON.stringify(result));
});

test('SIGTERM cancels the server\'s tasks and ends their trees; the server exits 0', { skip: http.ok ? false : http.why }, async () => {
  const w = makeWorkspace();
  const token = newToken();
  const file = sharedConfig(w, { agents: ['term'], tokens: [{ name: 'termer', token, agents: ['term'] }] });
  const server = await startHttpServer(file);
  const marker = uniqueMarker();
  try {
    const s = await rawSession(server.url('term'), token, REV, 'tasks-sigterm');
    const created = await s.call('tools/call', {
      name: 'execute_command',
      arguments: { command: `sh -c 'sleep 1000.${marker} & sleep 1000.${marker}; wait' tree-${marker}` },
      task: { ttl: 60000 },
    });
    assert.equal(created.result?.task?.status, 'working', JSON.stringify(created));
    assert.ok((await waitForMarker(marker)).length > 0, 'the tree started');
    const exited = await server.stop();
    assert.deepEqual(exited, { code: 0, signal: null });
    assert.deepEqual(await waitMarkerGone(marker, 2000), [], 'the task\'s tree outlived the server');
  } finally {
    killMarker(marker);
    await server.stop();
    w.cleanup();
  }
});
