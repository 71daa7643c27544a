// Shared fixtures for the end-to-end tests: temp workspaces and configs, an execmcp server driven
// through the official MCP SDK client or through a raw stdio pipe, and process-tree checks.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

// Every backend in tree offers background processes, so the five background-shell tools are listed.
export const TOOLS = [
  'execute_command',
  'get_background_shell_output',
  'get_background_shell_status',
  'kill_background_shell',
  'list_background_shells',
  'read_docstring',
  'read_file',
  'start_background_shell',
  'write_file',
];


export { sleep };

export const EXECMCP_BIN = process.env.EXECMCP_BIN;
if (!EXECMCP_BIN) {
  throw new Error('EXECMCP_BIN is not set: point it at the built execmcp binary (build/bin/execmcp)');
}

// Environment for the server: the test's own, plus the plugin dir when CMake told us where it is.
export function serverEnv(extra = {}) {
  const env = { ...process.env, ...extra };
  if (!env.EXECMCP_PLUGIN_PATH) {
    const guess = path.resolve(path.dirname(EXECMCP_BIN), '..', 'lib', 'execmcp', 'plugins');
    if (fs.existsSync(guess)) env.EXECMCP_PLUGIN_PATH = guess;
  }
  return env;
}

export function uniqueMarker() {
  // Digits only, so it can be the fractional part of a `sleep` argument and show in its cmdline.
  return String(100000000 + Math.floor(Math.random() * 899999999)) + String(process.pid);
}

// A fresh directory tree: <root>/ws (the agent's cwd), <root>/ctx (a read-only context path),
// <root>/outside (not granted), <root>/ws/tools (the agent's Python tools dir).
export function makeWorkspace() {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'execmcp-e2e-')));
  const ws = path.join(root, 'ws');
  const ctx = path.join(root, 'ctx');
  const outside = path.join(root, 'outside');
  for (const d of [ws, ctx, outside, path.join(ws, 'tools')]) fs.mkdirSync(d, { recursive: true });
  return {
    root,
    ws,
    ctx,
    outside,
    tools: path.join(ws, 'tools'),
    cleanup() {
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

function yamlString(s) {
  return JSON.stringify(s);  // JSON strings are valid YAML flow scalars
}

// Native-schema config for one agent `default` on the local backend.
// filters: 'default' (sanitize + patterns denying ^curl), 'none', or an explicit YAML list text.
// extra: more keys of the agent, as YAML lines indented by 4 (e.g. '    background: {max_running: 2}\n').
export function nativeConfig(
  w,
  { filters = 'default', timeout = 60, outputCap = 1048576, backend, agent = 'default', extra = '', preamble = '' } = {},
) {
  let filterText;
  if (filters === 'none') {
    filterText = '    filters: []\n';
  } else if (filters === 'default') {
    filterText =
      '    filters:\n' +
      '      - plugin: sanitize\n' +
      '      - plugin: patterns\n' +
      '        settings: {deny: ["^curl "]}\n';
  } else {
    filterText = filters;
  }
  const backendText = backend ?? '    backend: {plugin: local, settings: {}}\n';
  const text =
    'execmcp: 1\n' +
    preamble +
    'agents:\n' +
    `  - id: ${agent}\n` +
    `    cwd: ${yamlString(w.ws)}\n` +
    backendText +
    filterText +
    `    context_paths: [{path: ${yamlString(w.ctx)}, permission: read}]\n` +
    `    timeout: ${timeout}\n` +
    `    output_cap: ${outputCap}\n` +
    extra;
  return writeConfig(w, text);
}

export function writeConfig(w, text, name = 'execmcp.yaml') {
  const file = path.join(w.root, name);
  fs.writeFileSync(file, text);
  return file;
}

// Starts `execmcp serve` and connects the official SDK client to it.
// Returns { client, transport, stderr() } ; call close() when done.
export async function connectClient(configFile, { agent = 'default', env = {} } = {}) {
  const transport = new StdioClientTransport({
    command: EXECMCP_BIN,
    args: ['serve', '--config', configFile, '--agent', agent],
    env: serverEnv(env),
    stderr: 'pipe',
  });
  let stderrText = '';
  transport.stderr?.on('data', (d) => {
    stderrText += d.toString();
    if (stderrText.length > 200000) stderrText = stderrText.slice(-100000);
  });
  const client = new Client({ name: 'execmcp-e2e', version: '1.0.0' }, { capabilities: {} });
  try {
    await client.connect(transport);
  } catch (err) {
    err.message += `\n--- execmcp stderr ---\n${stderrText}`;
    throw err;
  }
  // Listing the tools makes the SDK validate every later structuredContent against the tool's
  // outputSchema, as a real client does.
  await client.listTools();
  return {
    client,
    transport,
    pid: transport.pid,
    stderr: () => stderrText,
    async close() {
      await client.close().catch(() => {});
    },
  };
}

// Calls a tool and returns the raw CallToolResult (isError results are returned, not thrown).
export function callTool(client, name, args, options = {}) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: 120000, ...options });
}

export function textOf(result) {
  return (result.content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
}

// PIDs of live processes whose command line contains `marker`.
export function processesWith(marker) {
  const found = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let cmdline;
    try {
      cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'latin1');
    } catch {
      continue;
    }
    if (!cmdline.includes(marker)) continue;
    // A zombie has an empty cmdline already, but be explicit: it is gone as far as we care.
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'latin1');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
    } catch {
      continue;
    }
    found.push({ pid: Number(entry), cmdline: cmdline.replaceAll('\0', ' ').trim() });
  }
  return found;
}

export async function waitUntil(predicate, { timeoutMs = 10000, stepMs = 50 } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > deadline) return value;
    await sleep(stepMs);
  }
}

// Waits for the marker processes to appear (so a later "gone" check means something).
export async function waitForMarker(marker, timeoutMs = 10000) {
  const procs = await waitUntil(() => processesWith(marker).length > 0 && processesWith(marker), {
    timeoutMs,
  });
  return procs || [];
}

export async function waitMarkerGone(marker, timeoutMs = 10000) {
  await waitUntil(() => processesWith(marker).length === 0, { timeoutMs });
  return processesWith(marker);
}

// Kills leftovers of a failed test so one failure does not leak into the next tests.
export function killMarker(marker) {
  for (const p of processesWith(marker)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

// A server on a raw pipe, for protocol-level checks the SDK would never send.
// Keeps every stdout line as raw bytes so tests can check UTF-8 validity.
export class RawServer {
  constructor(configFile, { agent = 'default', env = {}, args = [] } = {}) {
    this.child = spawn(EXECMCP_BIN, ['serve', '--config', configFile, '--agent', agent, ...args], {
      env: serverEnv(env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.lines = [];  // Buffers, one per line
    this.messages = [];  // parsed JSON (or {__unparsable: text})
    this.stderrText = '';
    this.waiters = [];
    let pending = Buffer.alloc(0);
    this.child.stdout.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      let nl;
      while ((nl = pending.indexOf(0x0a)) >= 0) {
        const line = pending.subarray(0, nl);
        pending = pending.subarray(nl + 1);
        if (line.length === 0) continue;
        this.lines.push(line);
        let msg;
        try {
          msg = JSON.parse(line.toString('utf8'));
        } catch {
          msg = { __unparsable: line.toString('utf8') };
        }
        this.messages.push(msg);
        this._wake();
      }
    });
    this.child.stderr.on('data', (d) => {
      this.stderrText += d.toString();
      if (this.stderrText.length > 200000) this.stderrText = this.stderrText.slice(-100000);
    });
    this.exit = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exited = { code, signal };
        resolve(this.exited);
        this._wake();
      });
    });
    this.child.stdin.on('error', () => {});  // EPIPE after the server exits is expected
  }

  _wake() {
    for (const w of this.waiters.splice(0)) w();
  }

  send(obj) {
    this.child.stdin.write(JSON.stringify(obj) + '\n');
  }

  sendRaw(text) {
    this.child.stdin.write(text);
  }

  // Resolves with the first message (and its raw bytes) matching `pred`, or throws on timeout.
  async waitFor(pred, timeoutMs = 15000, what = 'message') {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.messages.findIndex(pred);
      if (i >= 0) return { msg: this.messages[i], raw: this.lines[i] };
      if (this.exited) throw new Error(`server exited (${JSON.stringify(this.exited)}) before ${what}; stderr:\n${this.stderrText}`);
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.messages).slice(0, 2000)}; stderr:\n${this.stderrText}`);
      }
      await new Promise((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  response(id, timeoutMs = 15000) {
    return this.waitFor((m) => m.id === id && ('result' in m || 'error' in m), timeoutMs, `response to id ${id}`);
  }

  async initialize(protocolVersion = '2025-06-18', id = 'init') {
    this.send({
      jsonrpc: '2.0',
      id,
      method: 'initialize',
      params: { protocolVersion, capabilities: {}, clientInfo: { name: 'execmcp-e2e-raw', version: '1.0.0' } },
    });
    const { msg } = await this.response(id);
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return msg;
  }

  kill() {
    if (!this.exited) this.child.kill('SIGKILL');
  }
}

export function isValidUtf8(buf) {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(buf);
    return true;
  } catch {
    return false;
  }
}

export function randomName(prefix) {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

export function dockerAvailable(image) {
  const info = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 20000 });
  if (info.status !== 0) return { ok: false, why: 'no Docker engine answers (`docker info` failed)' };
  const img = spawnSync('docker', ['image', 'inspect', image], { encoding: 'utf8', timeout: 20000 });
  if (img.status !== 0) return { ok: false, why: `image ${image} is missing (build it with docker/build.sh)` };
  return { ok: true };
}
