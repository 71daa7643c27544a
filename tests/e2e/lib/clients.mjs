// The MCP clients the end-to-end tests drive execmcp with - the 1.x SDK and the 2.x client in each
// of its version-negotiation modes - over stdio or Streamable HTTP, behind one connect function,
// and the switch that decides whether the 2026-07-28 expectations are required yet.
import { spawn } from 'node:child_process';

import { Client as ClientV2, StreamableHTTPClientTransport as HttpTransportV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioTransportV2 } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioTransportV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpTransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { EXECMCP_BIN, serverEnv } from './harness.mjs';

export const REV2026 = '2026-07-28';

// Every client the matrix runs. `modern` marks the kinds that must end up on 2026-07-28 once
// execmcp offers it; `pinned` the one that cannot work at all before that.
export const CLIENT_KINDS = [
  { name: 'sdk 1.x', sdk: 1 },
  { name: 'client 2.x legacy', sdk: 2, mode: 'legacy' },
  { name: 'client 2.x auto', sdk: 2, mode: 'auto', modern: true },
  { name: 'client 2.x pin 2026-07-28', sdk: 2, mode: { pin: REV2026 }, modern: true, pinned: true },
];

const clientInfo = { name: 'execmcp-e2e', version: '1.0.0' };

function newClient(kind) {
  if (kind.sdk === 1) return new ClientV1(clientInfo, { capabilities: {} });
  // A short probe timeout: a stdio server that stays silent on server/discover is legacy (the
  // client falls back); execmcp answers at once either way.
  return new ClientV2(clientInfo, { capabilities: {}, versionNegotiation: { mode: kind.mode, probe: { timeoutMs: 10000 } } });
}

function collectStderr(stream) {
  let text = '';
  stream?.on('data', (d) => {
    text += d.toString();
    if (text.length > 200000) text = text.slice(-100000);
  });
  return () => text;
}

// Connects `kind` to execmcp. Exactly one of:
//   stdio: { configFile, agent = 'default', env = {} }   spawns `execmcp serve` (twice for the
//          2.x probing modes: the client probes server/discover on a throw-away sibling process)
//   http:  { url, token, headers = {} }                   a server started by lib/http.mjs
// Returns { client, kind, pid (stdio), stderr(), era(), version(), close() }.
export async function connectKind(kind, { stdio, http }) {
  let transport;
  let stderr = () => '';
  if (stdio) {
    const params = {
      command: EXECMCP_BIN,
      args: ['serve', '--config', stdio.configFile, '--agent', stdio.agent ?? 'default'],
      env: serverEnv(stdio.env ?? {}),
      stderr: 'pipe',
    };
    transport = kind.sdk === 1 ? new StdioTransportV1(params) : new StdioTransportV2(params);
    stderr = collectStderr(transport.stderr);
  } else {
    const headers = { ...(http.headers ?? {}) };
    if (http.token) headers.Authorization = `Bearer ${http.token}`;
    const Transport = kind.sdk === 1 ? HttpTransportV1 : HttpTransportV2;
    transport = new Transport(new URL(http.url), { requestInit: { headers } });
    if (http.stderr) stderr = http.stderr;
  }
  const client = newClient(kind);
  try {
    await client.connect(transport);
  } catch (err) {
    err.message += `\n--- execmcp stderr (${kind.name}) ---\n${stderr()}`;
    await client.close().catch(() => {});
    throw err;
  }
  return {
    client,
    kind,
    pid: transport.pid,
    stderr,
    era() {
      return kind.sdk === 1 ? 'legacy' : client.getProtocolEra();
    },
    // The protocol revision in use (the 1.x SDK only exposes it on its HTTP transport).
    version() {
      return kind.sdk === 1 ? transport.protocolVersion : client.getNegotiatedProtocolVersion();
    },
    async close() {
      await client.close().catch(() => {});
    },
  };
}

// tools/call with either SDK (1.x takes a result schema before the options). isError results are
// returned, not thrown.
export function callKind(conn, name, args, options = {}) {
  const opts = { timeout: 120000, ...options };
  if (conn.kind.sdk === 1) return conn.client.callTool({ name, arguments: args }, undefined, opts);
  return conn.client.callTool({ name, arguments: args }, opts);
}

// Whether the server says it speaks 2026-07-28: a server/discover on a fresh stdio server.
async function serverOffers2026(configFile) {
  const child = spawn(EXECMCP_BIN, ['serve', '--config', configFile], { env: serverEnv(), stdio: ['pipe', 'pipe', 'ignore'] });
  child.stdin.on('error', () => {});
  const probe = {
    jsonrpc: '2.0',
    id: 'e2e-discover',
    method: 'server/discover',
    params: {
      _meta: {
        'io.modelcontextprotocol/protocolVersion': REV2026,
        'io.modelcontextprotocol/clientInfo': clientInfo,
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  };
  child.stdin.write(JSON.stringify(probe) + '\n');
  const answer = await new Promise((resolve) => {
    let out = '';
    const timer = setTimeout(() => resolve(null), 10000);
    child.stdout.on('data', (d) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        try {
          resolve(JSON.parse(out.slice(0, nl)));
        } catch {
          resolve(null);
        }
      }
    });
    child.on('exit', () => {
      clearTimeout(timer);
      resolve(null);
    });
  });
  child.kill('SIGKILL');
  return Array.isArray(answer?.result?.supportedVersions) && answer.result.supportedVersions.includes(REV2026);
}

// The 2026-07-28 expectations are required when EXECMCP_E2E_REV2026=1, or when the server itself
// offers 2026-07-28 in server/discover (then it must keep that promise); EXECMCP_E2E_REV2026=0
// keeps them pending. Pending tests still run, as node:test TODOs: their failures are printed
// and do not fail the run. Returns the node:test options for such a test.
let rev2026Decision;
export async function rev2026Options(configFile) {
  if (!rev2026Decision) {
    const env = process.env.EXECMCP_E2E_REV2026;
    if (env === '1') rev2026Decision = Promise.resolve({ required: true });
    else if (env === '0') rev2026Decision = Promise.resolve({ required: false, why: 'EXECMCP_E2E_REV2026=0' });
    else {
      rev2026Decision = serverOffers2026(configFile).then((offered) =>
        offered ? { required: true } : { required: false, why: 'execmcp does not offer 2026-07-28 in server/discover yet' },
      );
    }
  }
  const d = await rev2026Decision;
  return d.required ? {} : { todo: `pending (${d.why}); EXECMCP_E2E_REV2026=1 makes it required` };
}
