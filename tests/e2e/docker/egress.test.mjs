// `network: egress` through the official clients over Streamable HTTP (issue 20): an agent reaches
// the host of its allow list and is refused every other one with a 403 the model can read; a
// per-user agent gives each user a proxy and a network of their own, which the other user cannot
// use; SIGTERM leaves no container and no network. Offline: the upstreams are containers on an
// --internal test network made here.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { CLIENT_KINDS, callKind, connectKind } from '../lib/clients.mjs';
import { dockerAvailable, makeWorkspace, textOf, waitUntil, writeConfig } from '../lib/harness.mjs';
import { newToken, startHttpServer } from '../lib/http.mjs';

const IMAGE = process.env.EXECMCP_DOCKER_IMAGE || 'execmcp/runtime:latest';
const EGRESS_IMAGE = 'execmcp/egress:latest';

function skipReason() {
  const runtime = dockerAvailable(IMAGE);
  if (!runtime.ok) return runtime.why;
  const proxy = dockerAvailable(EGRESS_IMAGE);
  if (!proxy.ok) return `${proxy.why.replace('docker/build.sh', 'docker/build.sh --egress')}`;
  return false;
}
const skip = skipReason();

function docker(...args) {
  const r = spawnSync('docker', args, { encoding: 'utf8', timeout: 60000 });
  return { status: r.status, out: (r.stdout || '').trim(), err: (r.stderr || '').trim() };
}

// Names of the containers (or networks) whose name starts with `prefix`.
function containersNamed(prefix) {
  const out = docker('ps', '-a', '--filter', `name=^${prefix}`, '--format', '{{.Names}}').out;
  return out ? out.split('\n') : [];
}
function networksNamed(prefix) {
  const out = docker('network', 'ls', '--filter', `name=^${prefix}`, '--format', '{{.Name}}').out;
  return out ? out.split('\n') : [];
}

describe('network: egress over HTTP', { skip }, () => {
  const tag = `egresse2e${process.pid}`;
  const upstream = `${tag}-up`;
  const agent = `eg${process.pid}`;
  const perUser = `egu${process.pid}`;
  const tokens = { ops: newToken(), alice: newToken(), bob: newToken() };
  let w;
  let server;
  let ops;
  let alice;
  let bob;
  let allowedHostname;
  // The audit file's records of refused requests.
  const egressRecords = () => {
    const audit = path.join(w.root, 'audit.jsonl');
    return (fs.existsSync(audit) ? fs.readFileSync(audit, 'utf8').split('\n') : [])
      .filter(Boolean)
      .map((line) => JSON.parse(line))
      .filter((r) => r.tool === 'egress');
  };

  before(async () => {
    w = makeWorkspace();
    // Two HTTP servers of /etc, as allowed.test and denied.test, on an internal network.
    assert.equal(docker('network', 'create', '--internal', '--label', tag, upstream).status, 0);
    for (const host of ['allowed', 'denied']) {
      const r = docker('run', '-d', '--name', `${tag}-${host}`, '--label', tag, '--network', upstream,
        '--network-alias', `${host}.test`, '--read-only', '--cap-drop', 'ALL', IMAGE,
        'python3', '-m', 'http.server', '80', '--directory', '/etc');
      assert.equal(r.status, 0, r.err);
    }
    allowedHostname = docker('inspect', '-f', '{{.Config.Hostname}}', `${tag}-allowed`).out;
    const settings = `{image: ${JSON.stringify(IMAGE)}, network: egress, egress: {allow: [allowed.test], upstream_network: ${upstream}}}`;
    let text =
      'execmcp: 1\n' +
      `audit_file: ${JSON.stringify(path.join(w.root, 'audit.jsonl'))}\n` +
      'agents:\n' +
      `  - id: ${agent}\n` +
      `    cwd: ${JSON.stringify(w.ws)}\n` +
      `    backend: {plugin: docker-api, settings: ${settings}}\n` +
      '    filters: [{plugin: sanitize}]\n' +
      `  - id: ${perUser}\n` +
      `    per_user: {workspace_root: ${JSON.stringify(path.join(w.root, 'users'))}, max_users: 2}\n` +
      `    backend: {plugin: docker-cli, settings: ${settings}}\n` +
      '    filters: [{plugin: sanitize}]\n' +
      'server:\n' +
      '  tokens:\n';
    for (const [name, token] of Object.entries(tokens)) {
      const sha = createHash('sha256').update(token).digest('hex');
      text += `    - {name: ${name}, sha256: ${sha}, agents: [${name === 'ops' ? agent : perUser}]}\n`;
    }
    server = await startHttpServer(writeConfig(w, text), { timeoutMs: 60000 });
    ops = await connectKind(CLIENT_KINDS[0], { http: { url: server.url(agent), token: tokens.ops, stderr: server.stderr } });
    alice = await connectKind(CLIENT_KINDS[0], { http: { url: server.url(perUser), token: tokens.alice, stderr: server.stderr } });
    bob = await connectKind(CLIENT_KINDS[2], { http: { url: server.url(perUser), token: tokens.bob, stderr: server.stderr } });
  });

  after(async () => {
    await ops?.close();
    await alice?.close();
    await bob?.close();
    await server?.stop();
    // A failure must leave nothing behind: the server removes its own; make sure, then ours.
    const left = [...containersNamed(`execmcp-${agent}-`), ...containersNamed(`execmcp-${perUser}-`)];
    if (left.length) docker('rm', '-f', ...left);
    for (const net of [...networksNamed(`execmcp-${agent}-`), ...networksNamed(`execmcp-${perUser}-`)]) docker('network', 'rm', net);
    docker('rm', '-f', `${tag}-allowed`, `${tag}-denied`);
    docker('network', 'rm', upstream);
    w?.cleanup();
  });

  test('the allowed host answers through the proxy; another is refused with a 403 naming it', async () => {
    const ok = await callKind(ops, 'execute_command', { command: 'curl -sS -m 10 http://allowed.test/hostname' });
    assert.notEqual(ok.isError, true, textOf(ok));
    assert.equal(ok.structuredContent.stdout.trim(), allowedHostname);

    const refused = await callKind(ops, 'execute_command', { command: 'curl -sS -m 10 -w "%{http_code}" http://denied.test/hostname' });
    const out = refused.structuredContent.stdout;
    assert.match(out, /refused GET to denied\.test port 80: not in the egress allow list of agent/);
    assert.match(out, /Allowed hosts: allowed\.test/);
    assert.match(out, /403$/);
    // The model is told even where a tool hides the 403 (pip), and the refusal is audited once.
    assert.match(textOf(refused), /the egress proxy refused a request: denied\.test:80 \(not in this agent's egress allow list; allow: allowed\.test\)/);
    assert.ok(await waitUntil(() => egressRecords().length >= 1, { timeoutMs: 5000 }), 'an egress audit record');
    const records = egressRecords();
    assert.equal(records.length, 1, JSON.stringify(records));
    assert.equal(records[0].agent, agent);
    assert.equal(records[0].verdict, 'refused');
    assert.equal(records[0].host, 'denied.test');
    assert.equal(records[0].port, 80);
    assert.equal(records[0].method, 'GET');
  });

  test('around the proxy the agent gets nowhere', async () => {
    const address = docker('inspect', '-f', `{{(index .NetworkSettings.Networks "${upstream}").IPAddress}}`, `${tag}-allowed`).out;
    const r = await callKind(ops, 'execute_command', {
      command:
        `curl -sS -m 3 --noproxy '*' http://allowed.test/hostname >/dev/null 2>&1 && echo noproxy-got-through; ` +
        `env -u http_proxy -u HTTP_PROXY curl -sS -m 3 http://${address}/hostname >/dev/null 2>&1 && echo raw-address-got-through; ` +
        `getent hosts allowed.test >/dev/null && echo dns-got-through; echo done`,
    });
    assert.equal(r.structuredContent.stdout.trim(), 'done', textOf(r));
  });

  test('each user of a per-user agent has a proxy of their own, which the other cannot use', async () => {
    for (const conn of [alice, bob]) {
      const r = await callKind(conn, 'execute_command', { command: 'curl -sS -m 10 http://allowed.test/hostname; echo "$HTTP_PROXY"' });
      assert.notEqual(r.isError, true, textOf(r));
      const [hostname, proxyUrl] = r.structuredContent.stdout.trim().split('\n');
      assert.equal(hostname, allowedHostname);
      // The proxy's alias on the user's own network: the same name, each user's own proxy.
      assert.equal(proxyUrl, 'http://execmcp-egress-proxy:3128');
    }
    const proxies = containersNamed(`execmcp-${perUser}-`).filter((n) => n.endsWith('-egress'));
    assert.equal(proxies.length, 2, JSON.stringify(proxies));
    assert.equal(networksNamed(`execmcp-${perUser}-`).length, 2);
    // Alice names bob's proxy: her network has no such name, and no route to its address.
    const bobs = proxies.find((n) => n.endsWith('-u-bob-egress'));
    assert.ok(bobs, JSON.stringify(proxies));
    const r = await callKind(alice, 'execute_command', {
      command: `curl -sS -m 3 -x http://${bobs}:3128 http://allowed.test/hostname >/dev/null 2>&1 && echo used-bobs-proxy; echo done`,
    });
    assert.equal(r.structuredContent.stdout.trim(), 'done', textOf(r));
    // A refusal in alice's sandbox is audited under her name.
    await callKind(alice, 'execute_command', { command: 'curl -s -m 10 http://denied.test/ >/dev/null; true' });
    assert.ok(await waitUntil(() => egressRecords().some((rec) => rec.agent === perUser), { timeoutMs: 5000 }));
    const hers = egressRecords().filter((rec) => rec.agent === perUser);
    assert.equal(hers.length, 1, JSON.stringify(hers));
    assert.equal(hers[0].user, 'alice');
    assert.equal(hers[0].host, 'denied.test');
  });

  test('SIGTERM removes every agent container, proxy and network', async () => {
    await ops.close();
    await alice.close();
    await bob.close();
    ops = alice = bob = undefined;
    const exit = await server.stop(30000);
    assert.equal(exit.forced, undefined, 'the server exited on SIGTERM');
    for (const id of [agent, perUser]) {
      assert.deepEqual(containersNamed(`execmcp-${id}-`), []);
      assert.deepEqual(networksNamed(`execmcp-${id}-`), []);
    }
  });
});
