// A per-user agent on the local backend in its OS sandbox (issue 31), through the real server over
// Streamable HTTP, without Docker: two users, each with their own token, get a sandbox of their own
// (their own pid namespace) with their own workspace at /workspace (<workspace_root>/<user> on the
// host) and cannot see each other's; an idle sandbox is stopped (nothing of it is left running) and
// its user's next call starts it again with the files; SIGTERM leaves no sandbox process.
// Skipped where bubblewrap is missing, unless EXECMCP_REQUIRE_SANDBOX=1 (CI).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { CLIENT_KINDS, callKind, connectKind } from './lib/clients.mjs';
import { makeWorkspace, textOf, waitUntil } from './lib/harness.mjs';
import { newToken, perUserSandboxConfig, startHttpServer } from './lib/http.mjs';

const IDLE_STOP = 2;
const required = process.env.EXECMCP_REQUIRE_SANDBOX === '1';
const bwrap = spawnSync('bwrap', ['--version'], { encoding: 'utf8' });
const skip = bwrap.status === 0 || required ? false : 'bubblewrap is not installed (apt-get install bubblewrap)';

async function metric(server, token, name) {
  const res = await fetch(`${server.base}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  const m = new RegExp(`^${name}\\{agent="[^"]+"\\} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

// Host pids of the live processes in the pid namespace `ns` ("pid:[N]").
function processesIn(ns) {
  const found = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readlinkSync(`/proc/${entry}/ns/pid`) !== ns) continue;
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'latin1');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

describe('per-user local agent in its OS sandbox over HTTP', { skip }, () => {
  const agent = `pul${process.pid}`;
  const tokens = { alice: newToken(), bob: newToken() };
  const conns = {};
  const namespaces = {};
  let w;
  let users;
  let server;

  async function pidNamespace(name) {
    const r = await callKind(conns[name], 'execute_command', { command: 'readlink /proc/self/ns/pid' });
    assert.notEqual(r.isError, true, textOf(r));
    return r.structuredContent.stdout.trim();
  }

  before(async () => {
    w = makeWorkspace();
    let file;
    ({ file, users } = perUserSandboxConfig(w, agent, tokens, { idleStop: IDLE_STOP, filters: '    filters: [{plugin: sanitize}]\n' }));
    server = await startHttpServer(file);
    conns.alice = await connectKind(CLIENT_KINDS[0], { http: { url: server.url(agent), token: tokens.alice, stderr: server.stderr } });
    conns.bob = await connectKind(CLIENT_KINDS[2], { http: { url: server.url(agent), token: tokens.bob, stderr: server.stderr } });
  });

  after(async () => {
    for (const conn of Object.values(conns)) await conn?.close();
    await server?.stop();
    w?.cleanup();
  });

  test('each user works in /workspace, their own directory on the host, in a sandbox of their own', async () => {
    for (const name of ['alice', 'bob']) {
      const wr = await callKind(conns[name], 'write_file', { path: 'secret.txt', content: `${name}'s secret\n` });
      assert.notEqual(wr.isError, true, textOf(wr));
      const r = await callKind(conns[name], 'execute_command', { command: 'pwd; ls -A /workspace; cat secret.txt' });
      assert.notEqual(r.isError, true, textOf(r));
      assert.equal(r.structuredContent.stdout, `/workspace\nsecret.txt\n${name}'s secret\n`);
      assert.equal(fs.readFileSync(path.join(users, name, 'secret.txt'), 'utf8'), `${name}'s secret\n`);
      const rd = await callKind(conns[name], 'read_file', { path: '/workspace/secret.txt' });
      assert.notEqual(rd.isError, true, textOf(rd));
      assert.match(textOf(rd), new RegExp(`${name}'s secret`));
      namespaces[name] = await pidNamespace(name);
    }
    // 0700, plus the traverse ACL for the sandbox user (the group bits show the ACL mask: --x).
    assert.equal(fs.statSync(users).mode & 0o777 & ~0o010, 0o700);
    // Each user's commands run in a pid namespace of their own, not the server's.
    assert.match(namespaces.alice, /^pid:\[\d+\]$/);
    assert.notEqual(namespaces.alice, namespaces.bob);
    assert.notEqual(namespaces.alice, fs.readlinkSync('/proc/self/ns/pid'));
    assert.ok(processesIn(namespaces.alice).length > 0);
  });

  test('a user reaches nothing of another user', async () => {
    const rd = await callKind(conns.alice, 'read_file', { path: '../bob/secret.txt' });
    assert.equal(rd.isError, true);
    assert.doesNotMatch(textOf(rd), new RegExp(users.replaceAll('/', '\\/')));
    const r = await callKind(conns.alice, 'execute_command', {
      command: `cat /workspace/../bob/secret.txt ${users}/bob/secret.txt 2>&1; ls ${users} 2>&1; true`,
    });
    assert.doesNotMatch(r.structuredContent.stdout, /bob's secret/);
    assert.match(r.structuredContent.stdout, /No such file or directory/);
  });

  test('an idle sandbox is stopped with nothing left running, and its next call starts it again with the files', async () => {
    const stopped = await waitUntil(async () => (await metric(server, tokens.alice, 'execmcp_sandboxes_stopped')) === 2, {
      timeoutMs: 20000,
      stepMs: 200,
    });
    assert.ok(stopped, server.stderr().slice(-3000));
    assert.equal(await metric(server, tokens.alice, 'execmcp_sandboxes_running'), 0);
    assert.deepEqual(processesIn(namespaces.alice), []);
    assert.deepEqual(processesIn(namespaces.bob), []);
    const r = await callKind(conns.alice, 'execute_command', { command: 'cat secret.txt' });
    assert.notEqual(r.isError, true, textOf(r));
    assert.equal(r.structuredContent.stdout, "alice's secret\n");
    assert.match(textOf(r), /sandbox started again/);
    namespaces.alice2 = await pidNamespace('alice');
    assert.notEqual(namespaces.alice2, namespaces.alice);
  });

  test('SIGTERM leaves no sandbox process and keeps every workspace', async () => {
    const started = await callKind(conns.alice, 'start_background_shell', { command: 'sleep 300' });
    assert.notEqual(started.isError, true, textOf(started));
    assert.ok(processesIn(namespaces.alice2).length > 1);
    const exited = await server.stop();
    assert.equal(exited.code, 0, server.stderr().slice(-4000));
    assert.deepEqual(processesIn(namespaces.alice2), []);
    assert.deepEqual(fs.readdirSync(users).sort(), ['alice', 'bob']);
    assert.equal(fs.readFileSync(path.join(users, 'bob', 'secret.txt'), 'utf8'), "bob's secret\n");
  });
});
