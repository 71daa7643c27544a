// The 2.x MCP client (@modelcontextprotocol/client) against `execmcp serve` over stdio, in each of
// its version-negotiation modes: legacy (initialize, as the 1.x SDK does - see tools.test.mjs and
// lifecycle.test.mjs), auto (server/discover, falling back to initialize) and pinned to 2026-07-28.
// The 2026-07-28 expectations are TODO until execmcp offers that revision (lib/clients.mjs).
import { after } from 'node:test';

import { CLIENT_KINDS, connectKind, rev2026Options } from './lib/clients.mjs';
import { makeWorkspace, nativeConfig } from './lib/harness.mjs';
import { defineClientMatrix } from './lib/matrix.mjs';

const w = makeWorkspace();
const configFile = nativeConfig(w, { filters: 'none' });
const pending = await rev2026Options(configFile);

after(() => w.cleanup());

defineClientMatrix(
  'stdio',
  CLIENT_KINDS.filter((k) => k.sdk === 2),
  { connect: (kind) => connectKind(kind, { stdio: { configFile } }), pending },
);
