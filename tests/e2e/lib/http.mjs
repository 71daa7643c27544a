// Fixtures for the Streamable HTTP tests: whether this execmcp has `serve --http` at all, a
// shared-server config with bearer tokens, and a server started on a free loopback port whose
// address is read from its `listening on` log line.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { EXECMCP_BIN, serverEnv, writeConfig } from './harness.mjs';

// The line `execmcp serve --http` prints on stderr once its socket accepts connections, with the
// port actually bound (when 0 was asked for) and the scheme; IPv6 hosts in brackets:
//   [2026-11-23 04:00:00.000] [info] execmcp: listening on http://127.0.0.1:39127
export const LISTENING_RE = /execmcp: listening on (https?:\/\/(?:\[[0-9a-fA-F:]+\]|[^\s/:]+):\d+)/;

// { ok, why }: `serve --http` exists when the usage text mentions it. EXECMCP_E2E_HTTP=1 runs the
// HTTP tests anyway (to watch them fail while the flag is being built), =0 skips them.
export function httpSupport() {
  if (process.env.EXECMCP_E2E_HTTP === '1') return { ok: true };
  if (process.env.EXECMCP_E2E_HTTP === '0') return { ok: false, why: 'EXECMCP_E2E_HTTP=0' };
  const help = spawnSync(EXECMCP_BIN, ['serve', '--help'], { encoding: 'utf8', timeout: 20000, env: serverEnv() });
  if (`${help.stdout}${help.stderr}`.includes('--http')) return { ok: true };
  return { ok: false, why: 'this execmcp has no `serve --http` yet (`execmcp serve --help` does not mention --http)' };
}

export function newToken() {
  return randomBytes(24).toString('base64url');
}

function yamlString(s) {
  return JSON.stringify(s);
}

// A shared-server config: `agents` are ids (each gets <root>/ws-<id> as its workspace, on the local
// backend, no filters); `tokens` are { name, token, agents: [ids] | ['*'] }, stored as sha256.
// Local agents must be allowed explicitly in HTTP mode (they run as the server's user).
// No tokens: a server without authentication (only allowed on loopback).
export function sharedConfig(w, { agents, tokens = [], extra = '' }) {
  let text = 'execmcp: 1\nserver:\n  allow_local_agents: true\n';
  if (tokens.length > 0) text += '  tokens:\n';
  for (const t of tokens) {
    const sha = createHash('sha256').update(t.token).digest('hex');
    text += `    - name: ${yamlString(t.name)}\n      sha256: ${sha}\n      agents: [${t.agents.map(yamlString).join(', ')}]\n`;
  }
  text += extra;
  text += 'agents:\n';
  for (const id of agents) {
    const ws = path.join(w.root, `ws-${id}`);
    text +=
      `  - id: ${yamlString(id)}\n` +
      `    cwd: ${yamlString(ws)}\n` +
      '    backend: {plugin: local, settings: {}}\n' +
      '    filters: []\n' +
      '    timeout: 60\n';
  }
  const file = writeConfig(w, text, 'shared.yaml');
  return file;
}

// A per-user agent on the local backend's OS sandbox (issue 31): each token's user gets a sandbox
// of their own with <w.root>/users/<name> at /workspace. The sandbox user (1000 when the server is
// root) passes through w.root to users/ (0700, a traverse ACL the server gives it).
export function perUserSandboxConfig(w, agent, tokens, { idleStop, maxUsers = 3, filters = '' } = {}) {
  fs.chmodSync(w.root, 0o711);
  const users = path.join(w.root, 'users');
  let text =
    'execmcp: 1\n' +
    'agents:\n' +
    `  - id: ${agent}\n` +
    `    per_user: {workspace_root: ${JSON.stringify(users)}, max_users: ${maxUsers}, idle_stop: ${idleStop}, idle_remove: 600}\n` +
    '    backend: {plugin: local, settings: {isolation: sandbox}}\n' +
    filters +
    'server:\n' +
    '  tokens:\n';
  for (const [name, token] of Object.entries(tokens)) {
    const sha = createHash('sha256').update(token).digest('hex');
    text += `    - {name: ${name}, sha256: ${sha}, agents: [${agent}]}\n`;
  }
  return { file: writeConfig(w, text), users };
}

// A 2025-era session over raw JSON-RPC: initialize at `url` with `token`, then call(method,
// params) → the response message (the last `data:` of an SSE answer), with its HTTP status.
export async function rawSession(url, token, revision, clientName = 'e2e') {
  const init = await rawPost(
    url,
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: revision, capabilities: {}, clientInfo: { name: clientName, version: '1' } } },
    { token },
  );
  if (init.status !== 200) throw new Error(`initialize: HTTP ${init.status}: ${init.text}`);
  const sid = init.headers.get('mcp-session-id');
  let id = 10;
  return {
    init: init.json,
    sid,
    async call(method, params) {
      const res = await rawPost(url, { jsonrpc: '2.0', id: id++, method, params }, {
        token,
        headers: { 'mcp-session-id': sid, 'mcp-protocol-version': revision },
      });
      if (res.json) return { ...res.json, status: res.status };
      const data = res.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
      return { ...data.at(-1), status: res.status };
    },
  };
}

// Starts `execmcp serve --config FILE --http 127.0.0.1:0 [args]` and waits for its listening line.
// Returns { base, url(agent), child, stderr(), stop() }; stop() sends SIGTERM and waits for exit.
export async function startHttpServer(configFile, { args = [], env = {}, timeoutMs = 20000 } = {}) {
  const child = spawn(EXECMCP_BIN, ['serve', '--config', configFile, '--http', '127.0.0.1:0', ...args], {
    env: serverEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderrText = '';
  let stdoutText = '';
  child.stdout.on('data', (d) => (stdoutText += d.toString()));
  let exited = null;
  const exit = new Promise((resolve) => child.on('exit', (code, signal) => resolve((exited = { code, signal }))));
  const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "execmcp: listening on" line within ${timeoutMs} ms`)), timeoutMs);
    child.stderr.on('data', (d) => {
      stderrText += d.toString();
      if (stderrText.length > 400000) stderrText = stderrText.slice(-200000);
      const m = LISTENING_RE.exec(stderrText);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    exit.then((e) => {
      clearTimeout(timer);
      reject(new Error(`execmcp serve --http exited (${JSON.stringify(e)}) before listening`));
    });
  }).catch((err) => {
    child.kill('SIGKILL');
    err.message += `\n--- execmcp stderr ---\n${stderrText}\n--- stdout ---\n${stdoutText}`;
    throw err;
  });
  return {
    base,
    child,
    url: (agent) => `${base}/mcp/${encodeURIComponent(agent)}`,
    stderr: () => stderrText,
    exited: () => exited,
    async stop(graceMs = 10000) {
      if (exited) return exited;
      child.kill('SIGTERM');
      let timer;
      const done = await Promise.race([exit, new Promise((r) => (timer = setTimeout(() => r(null), graceMs)))]);
      clearTimeout(timer);
      if (done) return done;
      child.kill('SIGKILL');
      await exit;
      return { ...exited, forced: true };
    },
  };
}

// A raw JSON-RPC POST, for what the SDK clients would never send (no token, foreign Origin...).
// Returns { status, headers, text, json }.
export async function rawPost(url, body, { token, headers = {} } = {}) {
  const h = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...headers,
  };
  if (token) h.authorization = `Bearer ${token}`;
  const res = await fetch(url, { method: 'POST', headers: h, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export const initializeRequest = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'execmcp-e2e-raw', version: '1.0.0' } },
};
