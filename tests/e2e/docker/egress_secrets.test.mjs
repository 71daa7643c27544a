// Secrets held by the egress proxy (issue 30), end to end through the server over Streamable
// HTTP, for docker-api and docker-cli: the sandbox holds placeholders only; the proxy puts the
// value into requests to a matching host, method, path and header, over TLS with a certificate of
// the agent's own CA, and leaves it out of every other; an echo of the value comes back scrubbed;
// a passed-through host keeps its own certificate; curl, Python, git and pip work; the value is
// in no container's inspect or log, not in the server's log, its audit trail or a result.
// Offline: the upstreams are containers of the runtime image on an --internal test network,
// serving HTTPS with a test CA (given as egress.upstream_ca) and recording what they receive where
// only this test reads it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

import { CLIENT_KINDS, callKind, connectKind } from '../lib/clients.mjs';
import { EXECMCP_BIN, dockerAvailable, makeWorkspace, serverEnv, textOf, writeConfig } from '../lib/harness.mjs';
import { newToken, startHttpServer } from '../lib/http.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const UPSTREAM_SCRIPT = path.join(here, '../../docker/egress/secret_upstream.py');
const IMAGE = process.env.EXECMCP_DOCKER_IMAGE || 'execmcp/runtime:latest';
const EGRESS_IMAGE = 'execmcp/egress:latest';

function docker(...args) {
  const r = spawnSync('docker', args, { encoding: 'utf8', timeout: 60000 });
  return { status: r.status, out: (r.stdout || '').trim(), err: (r.stderr || '').trim() };
}

function skipReason() {
  const runtime = dockerAvailable(IMAGE);
  if (!runtime.ok) return runtime.why;
  const proxy = dockerAvailable(EGRESS_IMAGE);
  if (!proxy.ok) return `${proxy.why.replace('docker/build.sh', 'docker/build.sh --egress')}`;
  if (spawnSync('openssl', ['version']).status !== 0) return 'openssl is missing: SKIPPING';
  return false;
}
const skip = skipReason();

// A token-like value: a public prefix and 36 random letters and digits.
function tokenValue(prefix) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let out = prefix;
  for (const b of randomBytes(36)) out += alphabet[b % alphabet.length];
  return out;
}

// A regular expression that matches `value` without holding it: the sandbox never sees the
// value, not even in the test's own grep.
function hiddenPattern(value) {
  return `${value.slice(0, 10)}[${value[10]}]${value.slice(11)}`;
}

// The test CA and a server certificate for `names`, in `dir` (world-readable: the upstream runs
// as the image's user).
function makeCerts(dir, names) {
  fs.writeFileSync(path.join(dir, 'server.ext'),
    `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}\n` +
    'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n');
  const ec = '-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes';
  const script = `set -e; cd '${dir}'; ` +
    `openssl req -x509 ${ec} -keyout ca.key -out ca.pem -days 2 -subj '/CN=execmcp e2e test CA' ` +
    '-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign; ' +
    `openssl req -new ${ec} -keyout server.key -out server.csr -subj '/CN=execmcp e2e upstream'; ` +
    'openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext; ' +
    'chmod 644 ca.pem server.pem server.key';
  const r = spawnSync('sh', ['-c', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
}

// One upstream container: HTTPS and HTTP for `aliases`, expecting `value` where it wants auth.
function startUpstream(name, network, dir, aliases, value) {
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  fs.chmodSync(dir, 0o755);
  makeCerts(dir, aliases);
  fs.copyFileSync(UPSTREAM_SCRIPT, path.join(dir, 'secret_upstream.py'));
  fs.writeFileSync(path.join(dir, 'auth'), value, { mode: 0o644 });
  const args = ['run', '-d', '--name', name, '--label', 'execmcp.test=secret-upstream', '--network', network];
  for (const a of aliases) args.push('--network-alias', a);
  args.push('--read-only', '--tmpfs', '/tmp:rw,mode=1777', '--tmpfs', '/record:rw,mode=1777',
    '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges', '-v', `${dir}:/upstream:ro`, IMAGE,
    'python3', '/upstream/secret_upstream.py', '--cert', '/upstream/server.pem', '--key',
    '/upstream/server.key', '--record', '/record/requests.jsonl', '--auth-file', '/upstream/auth');
  const r = docker(...args);
  assert.equal(r.status, 0, r.err);
}

async function waitListening(name) {
  for (let i = 0; i < 200; i++) {
    const logs = spawnSync('docker', ['logs', name], { encoding: 'utf8' });
    if (`${logs.stdout}${logs.stderr}`.includes('secret-upstream: listening')) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`upstream ${name} did not listen`);
}

// What an upstream received: [{method, path, headers: [[name, value]], body}].
function received(name) {
  const out = docker('exec', name, 'cat', '/record/requests.jsonl').out;
  return out ? out.split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
}
const header = (req, name) => (req.headers.find(([k]) => k.toLowerCase() === name.toLowerCase()) || [])[1];

// Each Docker backend, and docker-api's sandbox under gVisor where the engine has it.
// A runsc registered with --network=none (as scripts/docker-engine.sh does) gives loopback only,
// where network: egress cannot apply: then the run is skipped and says so.
function runscSkip() {
  if (skip) return skip;
  let runtimes = {};
  try {
    runtimes = JSON.parse(docker('info', '--format', '{{json .Runtimes}}').out || '{}');
  } catch {
    return 'the engine did not list its runtimes: SKIPPING';
  }
  if (!runtimes.runsc) return 'the engine has no runsc runtime: SKIPPING';
  if ((runtimes.runsc.runtimeArgs || []).includes('--network=none'))
    return "the engine's runsc runs with --network=none, where network: egress cannot apply: SKIPPING";
  return false;
}
const RUNS = [
  { plugin: 'docker-api', key: 'a', runtime: '' },
  { plugin: 'docker-cli', key: 'c', runtime: '' },
  { plugin: 'docker-api', key: 'g', runtime: 'runsc', skip: runscSkip() },
];
for (const { plugin, key, runtime, skip: runSkip = skip } of RUNS) {
  const title = `egress secrets over HTTP (${plugin}${runtime ? `, runtime ${runtime}` : ''})`;
  describe(title, { skip: runSkip }, () => {
    const tag = `sece2e${process.pid}${key}`;
    const network = `${tag}-up`;
    const apiUp = `${tag}-api`;
    const gitUp = `${tag}-git`;
    const agent = `sec${key}${process.pid}`;
    const broken = `${agent}b`;
    const token = newToken();
    const apiValue = tokenValue('ghp_');
    const gitValue = tokenValue('glpat-');
    let w;
    let server;
    let client;
    let brokenConfig;
    const results = [];
    const run = async (command) => {
      const r = await callKind(client, 'execute_command', { command, timeout: 120 });
      results.push(textOf(r));
      return r;
    };
    const audit = () => {
      const file = path.join(w.root, 'audit.jsonl');
      return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
    };
    const secretRecords = () => audit().split('\n').filter(Boolean).map((l) => JSON.parse(l))
      .filter((r) => r.tool === 'egress' && String(r.verdict).startsWith('secret'));

    before(async () => {
      w = makeWorkspace();
      assert.equal(docker('network', 'create', '--internal', '--label', tag, network).status, 0);
      startUpstream(apiUp, network, path.join(w.root, 'api'), ['api.test', 'pass.test'], apiValue);
      startUpstream(gitUp, network, path.join(w.root, 'git'), ['git.test', 'pypi.test'], gitValue);
      await Promise.all([waitListening(apiUp), waitListening(gitUp)]);
      // Both test CAs: the proxy trusts them beyond the system's roots. The sandbox gets the api
      // upstream's CA in its workspace for the passed-through host only.
      const roots = path.join(w.root, 'upstream-roots.pem');
      fs.writeFileSync(roots, fs.readFileSync(path.join(w.root, 'api/ca.pem')) +
        fs.readFileSync(path.join(w.root, 'git/ca.pem')));
      fs.copyFileSync(path.join(w.root, 'api/ca.pem'), path.join(w.ws, 'pass-ca.pem'));
      const gitFile = path.join(w.root, 'git-token');
      fs.writeFileSync(gitFile, `${gitValue}\n`, { mode: 0o600 });
      const egress = (from) => '{allow: [api.test, git.test, pypi.test, pass.test], ' +
        `upstream_network: ${network}, upstream_ca: ${JSON.stringify(roots)}, secrets: [` +
        `{name: API_TOKEN, from: "${from}", hosts: [api.test], header: Authorization, methods: [GET], paths: [/need-auth, /echo]}, ` +
        `{name: GIT_TOKEN, from: ${JSON.stringify(`file:${gitFile}`)}, hosts: [git.test, pypi.test]}]}`;
      const settings = (from) => `{image: ${JSON.stringify(IMAGE)}, network: egress${runtime ? `, runtime: ${runtime}` : ''}, egress: ${egress(from)}}`;
      brokenConfig = writeConfig(w, 'execmcp: 1\nagents:\n' +
        `  - id: ${broken}\n    cwd: ${JSON.stringify(w.ctx)}\n` +
        `    backend: {plugin: ${plugin}, settings: ${settings('env:EXECMCP_E2E_UNSET_TOKEN')}}\n`, 'broken.yaml');
      const text =
        'execmcp: 1\n' +
        `audit_file: ${JSON.stringify(path.join(w.root, 'audit.jsonl'))}\n` +
        'agents:\n' +
        `  - id: ${agent}\n` +
        `    cwd: ${JSON.stringify(w.ws)}\n` +
        `    backend: {plugin: ${plugin}, settings: ${settings('env:EXECMCP_E2E_API_TOKEN')}}\n` +
        'server:\n' +
        '  tokens:\n' +
        `    - {name: ops, sha256: ${createHash('sha256').update(token).digest('hex')}, agents: [${agent}]}\n`;
      server = await startHttpServer(writeConfig(w, text), {
        timeoutMs: 60000,
        env: { EXECMCP_E2E_API_TOKEN: apiValue },
      });
      client = await connectKind(CLIENT_KINDS[0], { http: { url: server.url(agent), token, stderr: server.stderr } });
    });

    after(async () => {
      await client?.close();
      await server?.stop();
      for (const id of [agent, broken]) {
        const left = docker('ps', '-a', '--filter', `name=^execmcp-${id}-`, '--format', '{{.Names}}').out;
        if (left) docker('rm', '-f', ...left.split('\n'));
        const nets = docker('network', 'ls', '--filter', `name=^execmcp-${id}-`, '--format', '{{.Name}}').out;
        for (const n of nets ? nets.split('\n') : []) docker('network', 'rm', n);
      }
      docker('rm', '-f', apiUp, gitUp);
      docker('network', 'rm', network);
      w?.cleanup();
    });

    test('the sandbox holds placeholders, not values, in its environment and its files', async () => {
      const r = await run(
        'echo "api=$API_TOKEN"; echo "git=$GIT_TOKEN"; echo "ca=$SSL_CERT_FILE"; ' +
        `cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -cE '${hiddenPattern(apiValue)}|${hiddenPattern(gitValue)}'; ` +
        `grep -rslE '${hiddenPattern(apiValue)}|${hiddenPattern(gitValue)}' /etc /tmp /home /workspace /.execmcp-trust ${w.ws} 2>/dev/null; echo end`);
      assert.notEqual(r.isError, true, textOf(r));
      const out = r.structuredContent.stdout;
      const api = /api=(\S+)/.exec(out)[1];
      const git = /git=(\S+)/.exec(out)[1];
      assert.equal(api.length, apiValue.length);
      assert.ok(api.startsWith('ghp_') && api !== apiValue, out);
      assert.equal(git.length, gitValue.length);
      assert.ok(git.startsWith('glpat-') && git !== gitValue, out);
      assert.match(out, /ca=\/\.execmcp-trust\/ca-bundle\.pem/);
      assert.match(out, /\n0\nend\s*$/, out);
    });

    test('curl: the value goes to the matching host, method, path and header only', async () => {
      const before = received(apiUp).length;
      const r = await run(
        'for i in $(seq 50); do curl -s -o /dev/null https://api.test/ && break; sleep 0.2; done; ' +
        'curl -m 20 -sS -H "Authorization: Bearer $API_TOKEN" https://api.test/need-auth; ' +
        'curl -m 20 -sS -X POST -H "Authorization: Bearer $API_TOKEN" https://api.test/need-auth; ' +
        'curl -m 20 -sS -H "Authorization: Bearer $API_TOKEN" https://api.test/need-authX; ' +
        'curl -m 20 -sS -H "X-Token: $API_TOKEN" https://api.test/need-auth; ' +
        'curl -m 20 -sS --cacert pass-ca.pem -H "Authorization: Bearer $API_TOKEN" https://pass.test/need-auth');
      const out = r.structuredContent.stdout;
      // Only the first matches: a POST, another path, another header and another host get the
      // placeholder (the upstream knows no /need-authX).
      assert.equal(out, 'authorized\nunauthorized\nnot found\nunauthorized\nunauthorized\n');
      const got = received(apiUp).slice(before).filter((q) => q.path.startsWith('/need-auth'));
      assert.equal(got.length, 5, JSON.stringify(got.map((q) => q.path)));
      assert.equal(header(got[0], 'authorization'), `Bearer ${apiValue}`);
      for (const q of got.slice(1)) assert.ok(!JSON.stringify(q).includes(apiValue), JSON.stringify(q));
    });

    test('the intercepted host is served with a certificate of the agent\'s own CA; others keep theirs', async () => {
      const r = await run(
        'curl -m 20 -sS -o /dev/null -w "%{http_code}\\n" https://api.test/echo; ' +
        'curl -m 20 -sv -o /dev/null https://api.test/echo 2>&1 | grep -m1 "issuer:"; ' +
        'curl -m 20 -s -o /dev/null -w "%{http_code}\\n" https://pass.test/echo; echo "passed-through-with-bundle:$?"');
      const out = r.structuredContent.stdout;
      assert.match(out, /^200\n/, out);
      assert.match(out, /issuer: .*execmcp egress CA/, out);
      // pass.test's certificate is the upstream's own, which the sandbox's roots do not know.
      assert.match(out, /^000\n/m, out);
    });

    test('an echo of the value comes back with the placeholder: plain, chunked and gzip', async () => {
      const r = await run(
        'for q in "" "?chunked=1" "?gzip=1" "?gzip=1&chunked=1"; do ' +
        'curl -m 20 -sS -H "Authorization: Bearer $API_TOKEN" "https://api.test/echo$q" | grep -c "$API_TOKEN"; done');
      assert.equal(r.structuredContent.stdout.trim(), '1\n1\n1\n1', textOf(r));
      const echoed = received(apiUp).filter((q) => q.path.startsWith('/echo') && header(q, 'authorization'));
      assert.ok(echoed.every((q) => header(q, 'authorization') === `Bearer ${apiValue}`));
    });

    test('Python, git and pip work through intercepted hosts with Basic credentials', async () => {
      const r = await run(
        'set -e; python3 -c "import os,urllib.request as u; ' +
        "q=u.Request('https://api.test/need-auth', headers={'Authorization': 'Bearer '+os.environ['API_TOKEN']}); " +
        'print(u.urlopen(q).read().decode().strip())"; ' +
        'if python3 -c "import requests" 2>/dev/null; then python3 -c "import os,requests; ' +
        "print(requests.get('https://api.test/need-auth', headers={'Authorization': 'Bearer '+os.environ['API_TOKEN']}).text.strip())\"; " +
        'else echo "requests: not in the image"; fi; ' +
        'cd /tmp && rm -rf r && git clone -q "https://x:$GIT_TOKEN@git.test/git/r.git" r && cd r && ' +
        'git -c user.email=t@t -c user.name=t commit -q --allow-empty -m e2e && git push -q origin HEAD && echo pushed; ' +
        'pip install -q --no-cache-dir --target /tmp/pp --index-url "https://__token__:$GIT_TOKEN@pypi.test/simple/" probe ' +
        '&& PYTHONPATH=/tmp/pp python3 -c "import probe; print(probe.VALUE)"');
      const out = r.structuredContent.stdout;
      assert.equal(r.structuredContent.exit_code, 0, textOf(r));
      assert.match(out, /^authorized\n/, out);
      assert.match(out, /\n(authorized|requests: not in the image)\n/, out);
      assert.match(out, /pushed\n/, out);
      assert.match(out, /probe 1\.0/, out);
      const git = received(gitUp);
      assert.ok(git.some((q) => q.path.startsWith('/git/') && q.method === 'POST'), 'a push reached the upstream');
      for (const q of git) {
        const auth = header(q, 'authorization');
        if (!auth) continue;
        const decoded = Buffer.from(auth.replace(/^Basic /, ''), 'base64').toString();
        assert.ok(decoded.endsWith(`:${gitValue}`), `Basic credentials carry the value (${q.path})`);
      }
    });

    test('withheld placeholders are audited with host, method, path and secret, never the value', async () => {
      const records = secretRecords();
      const withheld = records.filter((r) => r.verdict === 'secret withheld');
      assert.ok(withheld.some((r) => r.method === 'POST' && r.path === '/need-auth' && r.secret === 'API_TOKEN'), JSON.stringify(withheld));
      assert.ok(withheld.some((r) => r.path === '/need-authX'), JSON.stringify(withheld));
      assert.ok(records.some((r) => r.verdict === 'secret injected' && r.host === 'git.test' && r.secret === 'GIT_TOKEN'));
      assert.ok(records.every((r) => r.agent === agent && r.principal === 'sandbox'));
    });

    test('a secret whose source is missing is refused at the config check, naming it, never a value', () => {
      const r = spawnSync(EXECMCP_BIN, ['check-config', brokenConfig], {
        encoding: 'utf8', env: serverEnv({ EXECMCP_E2E_API_TOKEN: apiValue }), timeout: 60000,
      });
      const said = `${r.stdout}${r.stderr}`;
      assert.notEqual(r.status, 0, said);
      assert.match(said, /API_TOKEN/);
      assert.match(said, /EXECMCP_E2E_UNSET_TOKEN/);
      assert.ok(!said.includes(apiValue) && !said.includes(gitValue), 'no value printed');
    });

    test('the value is in no inspect, container log, server log, audit record or result', async () => {
      const names = docker('ps', '-a', '--filter', `name=^execmcp-${agent}-`, '--format', '{{.Names}}').out.split('\n');
      assert.ok(names.some((n) => n.endsWith('-egress')), JSON.stringify(names));
      for (const name of names) {
        const inspect = docker('inspect', name).out;
        const logs = spawnSync('docker', ['logs', name], { encoding: 'utf8' });
        for (const value of [apiValue, gitValue]) {
          assert.ok(!inspect.includes(value), `docker inspect ${name}`);
          assert.ok(!`${logs.stdout}${logs.stderr}`.includes(value), `docker logs ${name}`);
        }
      }
      for (const value of [apiValue, gitValue]) {
        assert.ok(!server.stderr().includes(value), 'the server log');
        assert.ok(!audit().includes(value), 'the audit trail');
        assert.ok(!results.some((t) => t.includes(value)), 'a tool result');
      }
    });
  });
}
