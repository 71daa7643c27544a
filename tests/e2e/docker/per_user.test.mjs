// A per-user agent (docker-api, then docker-cli) through the official clients over Streamable HTTP (issue 19): two
// users, each with their own token and client (the 1.x SDK and the 2.x client on 2026-07-28), get
// their own container and workspace and cannot see each other; a third user past max_users gets
// 429; an idle sandbox is stopped and its user's next call starts it again with the files; a
// stopped one is removed and made anew; SIGTERM removes every container and keeps every workspace.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { CLIENT_KINDS, callKind, connectKind } from '../lib/clients.mjs';
import { dockerAvailable, makeWorkspace, textOf, waitUntil, writeConfig } from '../lib/harness.mjs';
import { newToken, rawPost, startHttpServer } from '../lib/http.mjs';
import { createHash, createSign, generateKeyPairSync } from 'node:crypto';

const IMAGE = process.env.EXECMCP_DOCKER_IMAGE || 'execmcp/runtime:latest';
const available = dockerAvailable(IMAGE);
const skip = available.ok ? false : available.why;

const IDLE_STOP = 2;
const IDLE_REMOVE = 3;
const ISSUER = 'https://auth.per-user.example';
const AUDIENCE = 'https://execmcp.per-user.example/mcp';

// An RS256 access token for `sub`, signed by the test's own issuer key.
function jwtFor(key, agent, sub) {
  const part = (x) => Buffer.from(JSON.stringify(x)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const body = `${part({ alg: 'RS256', typ: 'JWT', kid: 'k1' })}.${part({
    iss: ISSUER,
    aud: AUDIENCE,
    sub,
    iat: now,
    exp: now + 600,
    execmcp_agents: [agent],
  })}`;
  return `${body}.${createSign('RSA-SHA256').update(body).sign(key).toString('base64url')}`;
}

function containers(agent) {
  const out = spawnSync('docker', ['ps', '-a', '--filter', `name=execmcp-${agent}-`, '--format', '{{.Names}} {{.State}}'], {
    encoding: 'utf8',
  }).stdout.trim();
  return out ? out.split('\n').map((line) => line.split(' ')) : [];
}

async function metric(server, token, name) {
  const res = await fetch(`${server.base}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  const m = new RegExp(`^${name}\\{agent="[^"]+"\\} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

for (const plugin of ['docker-api', 'docker-cli']) {
  describe(`per-user ${plugin} agent over HTTP`, { skip }, () => {
    const agent = `pu${plugin === 'docker-api' ? 'a' : 'c'}${process.pid}`;
    const tokens = { alice: newToken(), bob: newToken(), carol: newToken() };
    let w;
    let users;
    let server;
    let alice;
    let bob;
    let issuerKey;
    let jwtKey;

    before(async () => {
      w = makeWorkspace();
      users = path.join(w.root, 'users');
      const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
      issuerKey = keys.privateKey;
      const jwks = path.join(w.root, 'jwks.json');
      const jwk = { ...keys.publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256', use: 'sig' };
      fs.writeFileSync(jwks, JSON.stringify({ keys: [jwk] }));
      let text =
        'execmcp: 1\n' +
        'agents:\n' +
        `  - id: ${agent}\n` +
        `    per_user: {workspace_root: ${JSON.stringify(users)}, max_users: 3, warm: 1, ` +
        `idle_stop: ${IDLE_STOP}, idle_remove: ${IDLE_REMOVE}}\n` +
        `    backend: {plugin: ${plugin}, settings: {image: ${JSON.stringify(IMAGE)}}}\n` +
        '    filters: [{plugin: sanitize}]\n' +
        'server:\n' +
        `  public_url: ${AUDIENCE}\n` +
        `  oauth: {issuer: ${JSON.stringify(ISSUER)}, audience: ${JSON.stringify(AUDIENCE)}, keys: ${JSON.stringify(jwks)}}\n` +
        '  tokens:\n';
      for (const [name, token] of Object.entries(tokens)) {
        const sha = createHash('sha256').update(token).digest('hex');
        text += `    - {name: ${name}, sha256: ${sha}, agents: [${agent}]}\n`;
      }
      server = await startHttpServer(writeConfig(w, text));
      // The first user's call finds a warm container ready.
      await waitUntil(async () => (await metric(server, tokens.alice, 'execmcp_sandboxes_warm')) === 1, {
        timeoutMs: 30000,
        stepMs: 100,
      });
      // One user on the 1.x SDK, the other on the 2.x client (2026-07-28 when it negotiates it).
      alice = await connectKind(CLIENT_KINDS[0], { http: { url: server.url(agent), token: tokens.alice, stderr: server.stderr } });
      bob = await connectKind(CLIENT_KINDS[2], { http: { url: server.url(agent), token: tokens.bob, stderr: server.stderr } });
    });

    after(async () => {
      await alice?.close();
      await bob?.close();
      await server?.stop();
      // A failure must leave nothing behind: the server removes its containers; make sure.
      const left = containers(agent).map(([name]) => name);
      if (left.length) spawnSync('docker', ['rm', '-f', ...left]);
      w?.cleanup();
    });

    test('each user works in /workspace, their own directory on the host', async () => {
      for (const [name, conn] of [['alice', alice], ['bob', bob]]) {
        const wr = await callKind(conn, 'write_file', { path: 'secret.txt', content: `${name}'s secret\n` });
        assert.notEqual(wr.isError, true, textOf(wr));
        const r = await callKind(conn, 'execute_command', { command: 'pwd; ls -A /workspace; cat secret.txt' });
        assert.notEqual(r.isError, true, textOf(r));
        assert.equal(r.structuredContent.stdout, `/workspace\nsecret.txt\n${name}'s secret\n`);
        assert.equal(fs.readFileSync(path.join(users, name, 'secret.txt'), 'utf8'), `${name}'s secret\n`);
      }
      // The first user took the warm container (made before anyone called).
      assert.equal(await metric(server, tokens.alice, 'execmcp_sandbox_claims_total'), 1);
      assert.equal(fs.statSync(users).mode & 0o777, 0o700);
    });

    test('a user reaches nothing of another user', async () => {
      const rd = await callKind(alice, 'read_file', { path: '../bob/secret.txt' });
      assert.equal(rd.isError, true);
      const r = await callKind(alice, 'execute_command', {
        command: `cat /workspace/../bob/secret.txt; cat ${users}/bob/secret.txt; ls / | grep -c users; true`,
      });
      assert.doesNotMatch(r.structuredContent.stdout, /bob's secret/);
      assert.equal(r.structuredContent.stdout.trim(), '0');
      const [mine] = containers(agent).filter(([name]) => name.endsWith('-w-1'));
      assert.ok(mine, `alice's container: ${JSON.stringify(containers(agent))}`);
      const mounts = JSON.parse(spawnSync('docker', ['inspect', '--format', '{{json .Mounts}}', mine[0]], { encoding: 'utf8' }).stdout);
      const workspace = mounts.filter((m) => m.Destination === '/workspace');
      assert.equal(workspace.length, 1);
      assert.equal(mounts.some((m) => m.Source.includes(`${path.sep}bob`)), false);
    });

    test("background shells are each user's own", async () => {
      const started = await callKind(alice, 'start_background_shell', { command: 'sleep 60' });
      assert.notEqual(started.isError, true, textOf(started));
      const id = started.structuredContent.shell_id;
      assert.ok(id, JSON.stringify(started.structuredContent));
      const theirs = await callKind(bob, 'list_background_shells', {});
      assert.deepEqual(theirs.structuredContent.shells, []);
      const status = await callKind(bob, 'get_background_shell_status', { shell_id: id });
      assert.equal(status.isError, true, textOf(status));
      const kill = await callKind(bob, 'kill_background_shell', { shell_id: id });
      assert.equal(kill.isError, true, textOf(kill));
      const mine = await callKind(alice, 'list_background_shells', {});
      assert.deepEqual(
        mine.structuredContent.shells.map((shell) => [shell.shell_id, shell.status]),
        [[id, 'running']],
      );
      const killed = await callKind(alice, 'kill_background_shell', { shell_id: id });
      assert.notEqual(killed.isError, true, textOf(killed));
    });

    test("a JWT user's workspace is named jwt- and 32 hex digits of SHA-256(iss, sub)", async () => {
      const token = jwtFor(issuerKey, agent, 'user/../../etc');
      const conn = await connectKind(CLIENT_KINDS[2], { http: { url: server.url(agent), token, stderr: server.stderr } });
      try {
        const r = await callKind(conn, 'execute_command', { command: 'pwd; echo jwt > mine.txt' });
        assert.notEqual(r.isError, true, textOf(r));
        assert.equal(r.structuredContent.stdout, '/workspace\n');
      } finally {
        await conn.close();
      }
      const key = `jwt-${createHash('sha256').update(`${ISSUER}\nuser/../../etc`).digest('hex').slice(0, 32)}`;
      assert.equal(fs.readFileSync(path.join(users, key, 'mine.txt'), 'utf8'), 'jwt\n');
      jwtKey = key;
    });

    test('a new user past max_users gets 429 naming the limit; the others do not notice', async () => {
      const call = {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'execute_command',
          arguments: { command: 'true' },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      };
      const res = await rawPost(server.url(agent), call, {
        token: tokens.carol,
        headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'execute_command' },
      });
      assert.equal(res.status, 429, res.text);
      assert.equal(res.headers.get('retry-after'), '60');
      assert.match(res.json.error_description, /limit of 3 user sandboxes \(per_user\.max_users\)/);
      assert.equal(fs.existsSync(path.join(users, 'carol')), false);
      const r = await callKind(bob, 'execute_command', { command: 'cat secret.txt' });
      assert.equal(r.structuredContent.stdout, "bob's secret\n");
    });

    test('an idle sandbox is stopped, and its next call starts it again with the files', async () => {
      const stopped = await waitUntil(async () => (await metric(server, tokens.alice, 'execmcp_sandboxes_stopped')) === 3, {
        timeoutMs: 20000,
        stepMs: 200,
      });
      assert.ok(stopped, `states: ${JSON.stringify(containers(agent))}`);
      assert.equal(await metric(server, tokens.alice, 'execmcp_sandboxes_running'), 0);
      // The three users' containers are stopped, not removed (a warm one may still run).
      assert.equal(containers(agent).filter(([, state]) => state === 'exited').length, 3, JSON.stringify(containers(agent)));
      const r = await callKind(alice, 'execute_command', { command: 'cat secret.txt' });
      assert.notEqual(r.isError, true, textOf(r));
      assert.equal(r.structuredContent.stdout, "alice's secret\n");
      assert.match(textOf(r), /sandbox started again/);
      assert.equal(await metric(server, tokens.alice, 'execmcp_sandbox_starts_total'), 1);
    });

    test('a stopped sandbox is removed, and its user gets a new one with the files', async () => {
      // Bob's and the JWT user's sandboxes stopped together, before alice's (started again above):
      // the first removal may be either of the two, so wait for both.
      const removed = await waitUntil(async () => (await metric(server, tokens.bob, 'execmcp_sandbox_removals_total')) >= 2, {
        timeoutMs: 30000,
        stepMs: 200,
      });
      assert.ok(removed, `states: ${JSON.stringify(containers(agent))}`);
      const r = await callKind(bob, 'execute_command', { command: 'cat secret.txt' });
      assert.notEqual(r.isError, true, textOf(r));
      assert.equal(r.structuredContent.stdout, "bob's secret\n");
      assert.match(textOf(r), /a new sandbox was made for this user/);
    });

    test('SIGTERM removes every container and keeps every workspace', async () => {
      const exited = await server.stop();
      assert.equal(exited.code, 0, server.stderr().slice(-4000));
      assert.deepEqual(containers(agent), []);
      assert.deepEqual(fs.readdirSync(users).sort(), ['alice', 'bob', jwtKey].sort());
      assert.equal(fs.readFileSync(path.join(users, 'alice', 'secret.txt'), 'utf8'), "alice's secret\n");
    });

    test("after a restart, a user's first call finds their files", async () => {
      server = await startHttpServer(path.join(w.root, 'execmcp.yaml'));
      await alice.close();
      alice = await connectKind(CLIENT_KINDS[1], { http: { url: server.url(agent), token: tokens.alice, stderr: server.stderr } });
      const r = await callKind(alice, 'execute_command', { command: 'cat secret.txt' });
      assert.notEqual(r.isError, true, textOf(r));
      assert.equal(r.structuredContent.stdout, "alice's secret\n");
      assert.match(textOf(r), /a new sandbox was made for this user/);
    });
  });
}
