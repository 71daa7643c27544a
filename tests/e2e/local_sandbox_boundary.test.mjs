// The local backend's OS sandbox as a MassGen local-mode config asks for it
// (command_line_local_isolation: sandbox), through the real server over stdio and the official SDK
// client: what issue 31 lists, on the real kernel. Canaries outside the workspace (in /root, /home,
// /srv, beside the workspace, the server's config) cannot be read or listed; nothing outside the
// workspace can be written and the host's /tmp is untouched; the server's processes are invisible
// and unkillable; no TCP to the host's loopback or any other address; ptrace, io_uring, AF_VSOCK and
// new user namespaces are refused (a C probe compiled here, run outside first so the test shows the
// sandbox refusing, not the machine). Skipped without bubblewrap or a C compiler, unless
// EXECMCP_REQUIRE_SANDBOX=1 (CI).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { callTool, connectClient, makeWorkspace, textOf, uniqueMarker, writeConfig } from './lib/harness.mjs';

const required = process.env.EXECMCP_REQUIRE_SANDBOX === '1';
const bwrap = spawnSync('bwrap', ['--version'], { encoding: 'utf8' });
const cc = spawnSync('cc', ['--version'], { encoding: 'utf8' });
const skip =
  required || (bwrap.status === 0 && cc.status === 0)
    ? false
    : 'bubblewrap or a C compiler is missing (scripts/install-deps.sh installs both)';

// Prints "<name> <errno>" per probe (0: the call worked).
const PROBE = `
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
static void show(const char* name, long r) { printf("%s %d\\n", name, r < 0 ? errno : 0); }
int main(void) {
  errno = 0; show("io_uring_setup", syscall(SYS_io_uring_setup, 1, NULL) < 0 && errno == EFAULT ? 0 : -1);
  int s = socket(AF_VSOCK, SOCK_STREAM, 0); show("vsock", s); if (s >= 0) close(s);
  pid_t child = fork();
  if (child == 0) { _exit(ptrace(PTRACE_TRACEME, 0, 0, 0) < 0 ? errno : 0); }
  int status = 0; waitpid(child, &status, 0); printf("ptrace %d\\n", WEXITSTATUS(status));
  child = fork();
  if (child == 0) { _exit(unshare(CLONE_NEWUSER) < 0 ? errno : 0); }
  waitpid(child, &status, 0); printf("userns %d\\n", WEXITSTATUS(status));
  return 0;
}
`;

function probeResults(text) {
  return Object.fromEntries(
    text
      .trim()
      .split('\n')
      .map((line) => line.split(' '))
      .map(([name, value]) => [name, Number(value)]),
  );
}

describe('a MassGen local-mode agent in its OS sandbox, through the server', { skip }, () => {
  const marker = uniqueMarker();
  const canaries = [];
  let w;
  let conn;
  let configFile;
  let listener;
  let listenerHits = 0;

  async function run(command) {
    const r = await callTool(conn.client, 'execute_command', { command });
    assert.notEqual(r.isError, true, textOf(r));
    return r.structuredContent;
  }

  before(async () => {
    w = makeWorkspace();
    fs.chmodSync(w.root, 0o711);  // the sandbox user (1000 when the server is root) passes through
    for (const dir of ['/root', '/home', '/srv', w.outside]) {
      if (!fs.existsSync(dir)) continue;
      const file = path.join(dir, `execmcp-canary-${marker}`);
      try {
        fs.writeFileSync(file, `canary ${marker}\n`);
        canaries.push(file);
      } catch {
        // not writable here (a non-root run): the others still count
      }
    }
    const probeSource = path.join(w.ws, 'probe.c');
    fs.writeFileSync(probeSource, PROBE);
    const built = spawnSync('cc', ['-O1', '-o', path.join(w.ws, 'probe'), probeSource], { encoding: 'utf8' });
    assert.equal(built.status, 0, built.stderr);
    listener = net.createServer((socket) => {
      listenerHits += 1;
      socket.destroy();
    });
    await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve));
    configFile = writeConfig(
      w,
      'agent:\n' +
        '  id: coder\n' +
        '  backend:\n' +
        '    type: openai\n' +
        `    cwd: ${JSON.stringify(w.ws)}\n` +
        '    enable_mcp_command_line: true\n' +
        '    command_line_execution_mode: local\n' +
        '    command_line_local_isolation: sandbox\n' +
        '    context_paths:\n' +
        `      - {path: ${JSON.stringify(w.ctx)}, permission: read}\n`,
      'massgen.yaml',
    );
    conn = await connectClient(configFile, { agent: 'coder' });
  });

  after(async () => {
    await conn?.close();
    listener?.close();
    for (const file of canaries) fs.rmSync(file, { force: true });
    w?.cleanup();
  });

  test('runs unprivileged with every layer in place', async () => {
    const r = await run("id -u; grep -E '^(NoNewPrivs|Seccomp|CapEff):' /proc/self/status");
    const [uid, ...status] = r.stdout.trim().split('\n');
    if (process.getuid() === 0) assert.notEqual(uid, '0');
    assert.match(status.join('\n'), /NoNewPrivs:\s+1/);
    assert.match(status.join('\n'), /Seccomp:\s+2/);
    assert.match(status.join('\n'), /CapEff:\s+0000000000000000/);
  });

  test('canaries outside the workspace and the server\'s config cannot be read or listed', async () => {
    assert.ok(canaries.length > 0, 'no canary could be made');
    for (const file of [...canaries, configFile]) {
      const r = await run(`cat ${JSON.stringify(file)}; echo "rc=$?"; ls ${JSON.stringify(path.dirname(file))} 2>&1`);
      assert.doesNotMatch(r.stdout, new RegExp(marker), `${file} was read or listed: ${r.stdout}`);
      assert.match(r.stdout, /rc=1/);
      const read = await callTool(conn.client, 'read_file', { path: file });
      assert.equal(read.isError, true, `read_file of ${file}: ${textOf(read)}`);
    }
    const shadow = await run('cat /etc/shadow 2>/dev/null | wc -c');
    assert.equal(shadow.stdout.trim(), '0');
  });

  test('nothing outside the workspace can be written, and the host\'s /tmp is untouched', async () => {
    const inside = `/tmp/execmcp-inside-${marker}`;
    const r = await run(
      `touch ${inside} && echo tmp-ok; ` +
        `for p in /usr/execmcp-${marker} /etc/execmcp-${marker} ${JSON.stringify(path.join(w.ctx, marker))}; ` +
        `do touch "$p" 2>/dev/null && echo "wrote $p"; done; ` +
        // The workspace's parent is only a mount point on the sandbox's own /tmp: a file made there
        // stays in the sandbox.
        `touch ${JSON.stringify(path.join(w.root, marker))}; ` +
        `touch ${JSON.stringify(path.join(w.ws, marker))} && echo ws-ok`,
    );
    assert.match(r.stdout, /tmp-ok/);
    assert.match(r.stdout, /ws-ok/);
    assert.doesNotMatch(r.stdout, /wrote /, r.stdout);
    assert.equal(fs.existsSync(inside), false, 'the sandbox\'s /tmp is its own');
    assert.equal(fs.existsSync(path.join(w.ctx, marker)), false);
    assert.equal(fs.existsSync(path.join(w.root, marker)), false, 'the workspace\'s parent on the host');
    assert.equal(fs.existsSync(path.join(w.ws, marker)), true);
  });

  test('the server\'s processes are invisible and unkillable', async () => {
    const r = await run(`ls /proc | grep -c '^[0-9]'; kill -9 ${conn.pid} 2>&1; echo "rc=$?"; cat /proc/1/cmdline | tr '\\0' ' '`);
    const [count] = r.stdout.trim().split('\n');
    assert.ok(Number(count) < 20, `the sandbox sees ${count} processes`);
    assert.match(r.stdout, /rc=1/);
    assert.doesNotMatch(r.stdout, /execmcp serve/);
    process.kill(conn.pid, 0);  // the server lives
  });

  test('no TCP to the host\'s loopback or any other address', async () => {
    const port = listener.address().port;
    const others = Object.values(os.networkInterfaces())
      .flat()
      .filter((a) => a && a.family === 'IPv4' && !a.internal)
      .map((a) => a.address);
    const targets = [`127.0.0.1 ${port}`, ...others.map((a) => `${a} ${port}`), '1.1.1.1 80'];
    const script = targets
      .map((t) => `python3 -c "import socket,sys; socket.create_connection(('${t.split(' ')[0]}', ${t.split(' ')[1]}), 2)" 2>&1 | tail -1`)
      .join('; ');
    const r = await run(script);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, targets.length, r.stdout);
    for (const line of lines) assert.match(line, /Connection refused|Network is unreachable|OSError/, line);
    assert.equal(listenerHits, 0, 'the host\'s listener was reached');
  });

  test('ptrace, io_uring, AF_VSOCK and new user namespaces are refused', async () => {
    const outside = spawnSync(path.join(w.ws, 'probe'), { encoding: 'utf8' });
    const host = probeResults(outside.stdout);
    const r = await run(`${JSON.stringify(path.join(w.ws, 'probe'))}`);
    const sandboxed = probeResults(r.stdout);
    for (const name of ['io_uring_setup', 'vsock', 'ptrace', 'userns']) {
      assert.equal(sandboxed[name], 1 /* EPERM */, `${name} inside: ${r.stdout}`);
      if (host[name] === 0) continue;  // allowed on this machine: the sandbox refused it
      console.log(`# ${name} is refused on this machine outside the sandbox too (errno ${host[name]})`);
    }
  });
});
