// The local backend's OS sandbox with `network: egress` (issue 31), through the real server over
// Streamable HTTP and the official SDK client, on the real kernel: the allowed host answers through
// the sandbox's own Squid (curl with the proxy variables the sandbox sets); a refused host, an IP
// literal, another port and a CONNECT to a refused host get a 403, and the command's result says
// it was the egress boundary (the notice the Docker backends give); a CONNECT or an absolute-form
// request relayed inside an allowed tunnel reaches the allowed host only; a raw TCP socket, UDP
// and DNS around the proxy get nowhere; each refusal is an audit record. One server serves two
// sandboxed agents (served over HTTP without allow_local_agents: they are isolated), which cannot
// see each other's files, processes or proxy. The "internet" is this test's own: HTTP, TCP and UDP
// listeners on one of this machine's own non-loopback addresses, named for Squid by a hosts file
// (EXECMCP_TEST_EGRESS_HOSTS_FILE); nothing leaves the machine, and every listener counts what
// reached it. Skipped where bubblewrap, user namespaces or squid are missing, unless
// EXECMCP_REQUIRE_SANDBOX=1 (CI).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import dgram from 'node:dgram';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { CLIENT_KINDS, callKind, connectKind } from './lib/clients.mjs';
import { makeWorkspace, textOf, waitUntil, writeConfig } from './lib/harness.mjs';
import { newToken, startHttpServer } from './lib/http.mjs';

const ALLOWED = 'allowed.execmcp.test';
const DENIED = 'denied.execmcp.test';
const BODY = 'HELLO-FROM-THE-LOCAL-INTERNET\n';
const NOTICE = /the egress proxy refused/;

// One of this machine's own IPv4 addresses other than loopback: traffic to it never leaves it.
const ownAddress = Object.values(os.networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

function readNumber(file) {
  try {
    return Number(fs.readFileSync(file, 'utf8').trim());
  } catch {
    return NaN;
  }
}

function skipReason() {
  if (process.env.EXECMCP_REQUIRE_SANDBOX === '1') return false;
  if (spawnSync('bwrap', ['--version']).status !== 0) return 'bubblewrap is not installed (scripts/install-deps.sh)';
  if (readNumber('/proc/sys/user/max_user_namespaces') === 0 || readNumber('/proc/sys/kernel/unprivileged_userns_clone') === 0)
    return 'user namespaces are off on this machine';
  const squid = process.env.EXECMCP_SQUID || '/usr/sbin/squid';
  if (!fs.existsSync(squid)) return `squid is not installed (${squid}; scripts/install-deps.sh)`;
  if (!ownAddress) return 'this machine has no non-loopback IPv4 address for the test\'s local "internet"';
  return false;
}
const skip = skipReason();

// The test's "internet": `web` (the allowed host's HTTP server, which records each request and
// answers a CONNECT sent to it with its own 405), `other` (a TCP port the policy does not allow,
// and the target of every relay attempt), UDP on that address and on the host's loopback, and TCP
// on the host's loopback. Each counts what reached it.
async function startInternet(address) {
  const seen = { requests: [], webConnections: 0, other: 0, udp: 0, loopbackTcp: 0 };
  const web = http.createServer((req, res) => {
    seen.requests.push({ method: req.method, url: req.url, host: req.headers.host });
    res.setHeader('connection', 'close');
    res.end(req.url === '/hello.txt' ? BODY : `the allowed host saw ${req.method} ${req.url}\n`);
  });
  web.on('connection', () => (seen.webConnections += 1));
  web.on('connect', (req, socket) => {
    seen.requests.push({ method: req.method, url: req.url, host: req.headers.host });
    socket.end('HTTP/1.1 405 Method Not Allowed\r\nX-Answered-By: the-allowed-host\r\nContent-Length: 0\r\n\r\n');
  });
  const other = net.createServer((s) => {
    seen.other += 1;
    s.destroy();
  });
  const loopbackTcp = net.createServer((s) => {
    seen.loopbackTcp += 1;
    s.destroy();
  });
  const udp = dgram.createSocket('udp4');
  const loopbackUdp = dgram.createSocket('udp4');
  for (const u of [udp, loopbackUdp]) u.on('message', () => (seen.udp += 1));
  const listen = (server, host) => new Promise((resolve) => server.listen(0, host, resolve));
  await listen(web, address);
  await listen(other, address);
  await listen(loopbackTcp, '127.0.0.1');
  await new Promise((resolve) => udp.bind(0, address, resolve));
  await new Promise((resolve) => loopbackUdp.bind(0, '127.0.0.1', resolve));
  return {
    seen,
    port: web.address().port,
    otherPort: other.address().port,
    loopbackTcpPort: loopbackTcp.address().port,
    udpPort: udp.address().port,
    loopbackUdpPort: loopbackUdp.address().port,
    close() {
      web.closeAllConnections?.();
      for (const s of [web, other, loopbackTcp]) s.close();
      for (const u of [udp, loopbackUdp]) u.close();
    },
  };
}

describe('a local agent in its OS sandbox with network: egress, through the server', { skip }, () => {
  const eg = `eg${process.pid}`;
  const nb = `nb${process.pid}`;
  const token = newToken();
  let w;
  let inet;
  let server;
  let egConn;
  let nbConn;
  let audit;
  let P;  // the allowed port
  let Q;  // a port the policy does not allow

  async function run(conn, command) {
    const r = await callKind(conn, 'execute_command', { command });
    assert.notEqual(r.isError, true, textOf(r));
    return { out: r.structuredContent.stdout, text: textOf(r) };
  }
  const egressRecords = () =>
    (fs.existsSync(audit) ? fs.readFileSync(audit, 'utf8').split('\n') : [])
      .filter(Boolean)
      .map((line) => JSON.parse(line))
      .filter((r) => r.tool === 'egress');

  before(async () => {
    assert.ok(ownAddress, 'this machine has no non-loopback IPv4 address for the test\'s "internet"');
    w = makeWorkspace();
    fs.chmodSync(w.root, 0o711);  // the sandbox user (1000 when the server is root) passes through
    inet = await startInternet(ownAddress);
    P = inet.port;
    Q = inet.otherPort;
    // Squid runs as the sandbox's uid and reads this.
    const hosts = path.join(w.root, 'hosts');
    fs.writeFileSync(hosts, `${ownAddress} ${ALLOWED}\n${ownAddress} ${DENIED}\n`);
    fs.chmodSync(hosts, 0o644);
    audit = path.join(w.root, 'audit.jsonl');
    const sha = createHash('sha256').update(token).digest('hex');
    let text = 'execmcp: 1\nagents:\n';
    for (const [id, settings] of [
      [eg, `{isolation: sandbox, network: egress, egress: {allow: [${ALLOWED}], ports: [${P}]}}`],
      [nb, '{isolation: sandbox}'],
    ]) {
      fs.mkdirSync(path.join(w.root, id));
      text +=
        `  - id: ${id}\n` +
        `    cwd: ${JSON.stringify(path.join(w.root, id))}\n` +
        `    backend: {plugin: local, settings: ${settings}}\n` +
        '    filters: [{plugin: sanitize}]\n';
    }
    text += `server:\n  tokens:\n    - {name: ops, sha256: ${sha}, agents: [${eg}, ${nb}]}\n`;
    server = await startHttpServer(writeConfig(w, text), {
      args: ['--audit-file', audit],
      env: { EXECMCP_TEST_EGRESS_HOSTS_FILE: hosts },
    });
    egConn = await connectKind(CLIENT_KINDS[0], { http: { url: server.url(eg), token, stderr: server.stderr } });
    nbConn = await connectKind(CLIENT_KINDS[0], { http: { url: server.url(nb), token, stderr: server.stderr } });
  });

  after(async () => {
    await egConn?.close();
    await nbConn?.close();
    const exited = await server?.stop();
    inet?.close();
    w?.cleanup();
    assert.notEqual(exited?.forced, true, 'the server exited on SIGTERM');
  });

  test('the allowed host answers through the sandbox\'s proxy, with no notice', async () => {
    const r = await run(egConn, `echo "$HTTP_PROXY"; curl -sS -m 5 http://${ALLOWED}:${P}/hello.txt`);
    assert.equal(r.out, `http://127.0.0.1:3128\n${BODY}`, r.text);
    assert.doesNotMatch(r.text, NOTICE);
    assert.deepEqual(inet.seen.requests, [{ method: 'GET', url: '/hello.txt', host: `${ALLOWED}:${P}` }]);
  });

  test('a refused host gets a 403, and the result says it was the egress boundary', async () => {
    // Shown as a tool that hides the 403 would (pip): only the status; the notice says why.
    const quiet = await run(egConn, `curl -s -m 5 -o /dev/null -w '%{http_code}' http://${DENIED}:${P}/secret`);
    assert.equal(quiet.out, '403');
    assert.match(
      quiet.text,
      new RegExp(`the egress proxy refused a request: ${DENIED.replaceAll('.', '\\.')}:${P} \\(not in this agent's egress allow list; allow: ${ALLOWED.replaceAll('.', '\\.')}\\)`),
    );
    // The page itself names the boundary too.
    const page = await run(egConn, `curl -s -m 5 http://${DENIED}:${P}/secret`);
    assert.match(page.out, new RegExp(`refused GET to ${DENIED.replaceAll('.', '\\.')} port ${P}: not in the egress allow list of agent ${eg}`));
    assert.match(page.text, NOTICE);
    assert.equal(inet.seen.requests.length, 1, JSON.stringify(inet.seen.requests));
  });

  test('an IP literal, another port and a CONNECT to a refused host are refused and noticed', async () => {
    const connections = inet.seen.webConnections;
    const r = await run(
      egConn,
      `c() { echo "$1 $(curl -s -m 5 -o /dev/null -w '%{http_code}' "$2")"; }; ` +
        `c literal http://${ownAddress}:${P}/hello.txt; ` +
        `c otherport http://${ALLOWED}:${Q}/hello.txt; ` +
        `echo "connect $(curl -s -m 5 -o /dev/null -w '%{http_connect}' -p https://${DENIED}:${P}/)"`,
    );
    assert.equal(r.out, 'literal 403\notherport 403\nconnect 403\n', r.text);
    assert.match(r.text, /the egress proxy refused 3 requests: /);
    for (const target of [`${ownAddress}:${P}`, `${ALLOWED}:${Q}`, `${DENIED}:${P}`]) assert.ok(r.text.includes(target), `${target} in ${r.text}`);
    assert.equal(inet.seen.webConnections, connections, 'the refused requests reached the web server');
    assert.equal(inet.seen.other, 0, 'another port was reached');
  });

  test('a CONNECT or a request relayed inside an allowed tunnel reaches the allowed host only', async () => {
    const script = `
import socket
def head(s):
    data = b''
    while b'\\r\\n\\r\\n' not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.decode(errors='replace')
def tunnel():
    s = socket.create_connection(('127.0.0.1', 3128), 5)
    s.sendall(b'CONNECT ${ALLOWED}:${P} HTTP/1.1\\r\\nHost: ${ALLOWED}:${P}\\r\\n\\r\\n')
    print('tunnel', head(s).split('\\r\\n')[0])
    return s
s = tunnel()
s.sendall(b'CONNECT ${DENIED}:${Q} HTTP/1.1\\r\\nHost: ${DENIED}:${Q}\\r\\n\\r\\n')
answer = head(s)
print('inner-connect', answer.split('\\r\\n')[0], 'the-allowed-host' in answer)
s = tunnel()
s.sendall(b'GET http://${DENIED}:${Q}/relayed HTTP/1.1\\r\\nHost: ${DENIED}:${Q}\\r\\nConnection: close\\r\\n\\r\\n')
data = b''
while True:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
print('inner-get', data.decode(errors='replace').split('\\r\\n\\r\\n', 1)[-1].strip())
`;
    const before = inet.seen.requests.length;
    const r = await run(egConn, `python3 - <<'EOF'\n${script}\nEOF`);
    assert.equal(
      r.out,
      'tunnel HTTP/1.1 200 Connection established\n' +
        'inner-connect HTTP/1.1 405 Method Not Allowed True\n' +
        'tunnel HTTP/1.1 200 Connection established\n' +
        `inner-get the allowed host saw GET http://${DENIED}:${Q}/relayed\n`,
      r.text,
    );
    // Both came to the allowed host as bytes in its tunnel; the proxy never saw them.
    assert.deepEqual(
      inet.seen.requests.slice(before).map((q) => q.method),
      ['CONNECT', 'GET'],
      JSON.stringify(inet.seen.requests),
    );
    assert.equal(inet.seen.other, 0, 'the relayed target was reached');
    assert.doesNotMatch(r.text, NOTICE);
  });

  test('around the proxy nothing gets out: no proxy variables, raw TCP, UDP, DNS, raw sockets', async () => {
    const connections = inet.seen.webConnections;
    const script = `
import socket
for name, addr in [('tcp-web', ('${ownAddress}', ${P})), ('tcp-other', ('${ownAddress}', ${Q})),
                   ('tcp-host-loopback', ('127.0.0.1', ${inet.loopbackTcpPort}))]:
    try:
        socket.create_connection(addr, 2); print(name, 'connected')
    except OSError as e:
        print(name, e.errno)
for name, addr in [('udp', ('${ownAddress}', ${inet.udpPort})), ('udp-host-loopback', ('127.0.0.1', ${inet.loopbackUdpPort}))]:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.sendto(b'x', addr); print(name, 'sent')
    except OSError as e:
        print(name, e.errno)
for host in ['${ALLOWED}', 'example.com']:
    try:
        socket.getaddrinfo(host, 80); print('dns', host, 'resolved')
    except OSError:
        print('dns', host, 'failed')
# A DNS query by hand to each name server the sandbox was given, and to a public one.
servers = [l.split()[1] for l in open('/etc/resolv.conf') if l.startswith('nameserver')] if __import__('os').path.exists('/etc/resolv.conf') else []
query = b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01'
answered = 0
for ns in servers + ['8.8.8.8']:
    u = socket.socket(socket.AF_INET6 if ':' in ns else socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(1)
    try:
        u.sendto(query, (ns, 53)); u.recv(512); answered += 1
    except OSError:
        pass
print('dns-answers', answered)
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print('raw created')
except OSError as e:
    print('raw', e.errno)
`;
    const r = await run(
      egConn,
      `echo "noproxy $(curl -s -m 3 -o /dev/null -w '%{http_code}' --noproxy '*' http://${ALLOWED}:${P}/hello.txt)"; ` +
        `echo "unset $(env -u http_proxy -u HTTP_PROXY curl -s -m 3 -o /dev/null -w '%{http_code}' http://${ownAddress}:${P}/hello.txt)"; ` +
        `python3 - <<'EOF'\n${script}\nEOF`,
    );
    assert.equal(
      r.out,
      'noproxy 000\nunset 000\n' +
        'tcp-web 101\ntcp-other 101\n' +
        // The sandbox's own loopback: nothing listens there but the relay on 3128.
        'tcp-host-loopback 111\n' +
        'udp 101\n' +
        'udp-host-loopback sent\n' +
        `dns ${ALLOWED} failed\ndns example.com failed\ndns-answers 0\n` +
        'raw 1\n',
      r.text,
    );
    assert.equal(inet.seen.webConnections, connections, 'the web server was reached around the proxy');
    assert.equal(inet.seen.other, 0);
    assert.equal(inet.seen.loopbackTcp, 0, 'the host\'s loopback was reached');
    assert.equal(inet.seen.udp, 0, 'a datagram reached the host');
    // Nothing the proxy saw: no notice, for what was never asked of it.
    assert.doesNotMatch(r.text, NOTICE);
  });

  test('each refusal is an audit record, the allowed requests none', async () => {
    const expected = [
      ['GET', DENIED, P],
      ['GET', ownAddress, P],
      ['GET', ALLOWED, Q],
      ['CONNECT', DENIED, P],
    ];
    const all = () => expected.every(([m, h, p]) => egressRecords().some((rec) => rec.method === m && rec.host === h && rec.port === p));
    assert.ok(await waitUntil(all, { timeoutMs: 5000 }), JSON.stringify(egressRecords()));
    const records = egressRecords();
    // The second GET of the refused host within the minute is a repeat: counted, not recorded.
    assert.equal(records.length, expected.length, JSON.stringify(records));
    for (const rec of records) {
      assert.equal(rec.agent, eg);
      assert.equal(rec.verdict, 'refused');
      assert.equal(rec.reason, "not in this agent's egress allow list");
      assert.notEqual(rec.host, ALLOWED === rec.host && rec.port === P ? rec.host : undefined);
    }
  });

  test('two sandboxed agents of one server see nothing of each other\'s', async () => {
    const wsOf = (id) => path.join(w.root, id);
    for (const [conn, id] of [[egConn, eg], [nbConn, nb]]) {
      const wr = await callKind(conn, 'write_file', { path: 'secret.txt', content: `${id}'s secret\n` });
      assert.notEqual(wr.isError, true, textOf(wr));
    }
    const ns = {};
    for (const [conn, id, otherId] of [[egConn, eg, nb], [nbConn, nb, eg]]) {
      const other = wsOf(otherId);
      const r = await run(
        conn,
        `cat secret.txt; cat ${JSON.stringify(path.join(other, 'secret.txt'))} 2>&1; ls ${JSON.stringify(other)} 2>&1; ` +
          `ls ${JSON.stringify(w.root)} 2>&1; readlink /proc/self/ns/pid; true`,
      );
      assert.match(r.out, new RegExp(`^${id}'s secret\n`));
      assert.doesNotMatch(r.out, new RegExp(`${otherId}'s secret`), r.out);
      assert.doesNotMatch(r.out, /audit\.jsonl|hosts/, r.out);
      ns[id] = r.out.trim().split('\n').at(-1);
      const rd = await callKind(conn, 'read_file', { path: path.join(other, 'secret.txt') });
      assert.equal(rd.isError, true, textOf(rd));
      const wr = await callKind(conn, 'write_file', { path: path.join(other, 'planted.txt'), content: 'x' });
      assert.equal(wr.isError, true, textOf(wr));
      assert.equal(fs.existsSync(path.join(other, 'planted.txt')), false);
    }
    assert.match(ns[eg], /^pid:\[\d+\]$/);
    assert.notEqual(ns[eg], ns[nb]);
    // The agent without egress has no way to the other's proxy: no relay on its 3128, no route.
    const r = await run(nbConn, `curl -s -m 3 -o /dev/null -w '%{http_code}' -x http://127.0.0.1:3128 http://${ALLOWED}:${P}/hello.txt`);
    assert.equal(r.out, '000');
  });
});
