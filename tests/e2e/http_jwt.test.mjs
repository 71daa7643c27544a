// OAuth 2.1 resource-server path of `execmcp serve --http`: JWT access tokens checked for
// signature, issuer, audience, expiry and the claim naming the allowed agents, and the RFC 9728
// metadata the 401 points at. The config shape is a guess until the server has it: the file is
// skipped, with `execmcp check-config`'s own words, while check-config refuses jwtConfig() below
// (adapt that one function to the real keys), and while there is no --http at all.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createSign, generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { EXECMCP_BIN, makeWorkspace, serverEnv, writeConfig } from './lib/harness.mjs';
import { httpSupport, initializeRequest, rawPost, startHttpServer } from './lib/http.mjs';

const ISSUER = 'https://auth.execmcp.example';
const RESOURCE = 'https://execmcp.example/mcp'; // the audience tokens must name
const CLAIM = 'execmcp_agents';

function b64url(x) {
  return Buffer.from(typeof x === 'string' ? x : JSON.stringify(x)).toString('base64url');
}

// An RS256 JWT signed with node's crypto (the test is the token issuer here, not the verifier).
function signJwt(privateKey, claims, { kid = 'k1', alg = 'RS256' } = {}) {
  const head = b64url({ alg, typ: 'JWT', kid });
  const body = b64url(claims);
  if (alg === 'none') return `${head}.${body}.`;
  const sig = createSign('RSA-SHA256').update(`${head}.${body}`).sign(privateKey).toString('base64url');
  return `${head}.${body}.${sig}`;
}

// The server's OAuth config (docs/configuration.md, server.oauth): a JWKS file with the issuer's
// public key.
function jwtConfig(w, jwksFile) {
  const ws = path.join(w.root, 'ws-alpha');
  return writeConfig(
    w,
    'execmcp: 1\n' +
      'server:\n' +
      '  allow_local_agents: true\n' +
      `  public_url: ${RESOURCE}\n` +
      '  oauth:\n' +
      `    issuer: ${JSON.stringify(ISSUER)}\n` +
      `    audience: ${JSON.stringify(RESOURCE)}\n` +
      `    keys: ${JSON.stringify(jwksFile)}\n` +
      `    agents_claim: ${CLAIM}\n` +
      `    authorization_servers: [${JSON.stringify(ISSUER)}]\n` +
      'agents:\n' +
      '  - id: alpha\n' +
      `    cwd: ${JSON.stringify(ws)}\n` +
      '    backend: {plugin: local, settings: {}}\n' +
      '    filters: []\n',
    'jwt.yaml',
  );
}

function setup() {
  const w = makeWorkspace();
  const issuerKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const otherKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...issuerKeys.publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256', use: 'sig' };
  const jwksFile = path.join(w.root, 'jwks.json');
  fs.writeFileSync(jwksFile, JSON.stringify({ keys: [jwk] }));
  const config = jwtConfig(w, jwksFile);
  const check = spawnSync(EXECMCP_BIN, ['check-config', config], { encoding: 'utf8', env: serverEnv(), timeout: 20000 });
  const why = check.status === 0 ? null : `execmcp check-config refuses the guessed JWT config: ${(check.stderr || check.stdout).trim()}`;
  return { w, config, why, issuerKey: issuerKeys.privateKey, otherKey: otherKeys.privateKey };
}

const support = httpSupport();
const fixture = support.ok ? setup() : null;
const skip = !support.ok ? support.why : fixture.why;

if (skip) {
  fixture?.w.cleanup();
  test('Streamable HTTP with JWT access tokens', { skip }, () => {});
} else {
  describe('Streamable HTTP with JWT access tokens', () => {
    const { w, config, issuerKey, otherKey } = fixture;
    let server;
    const now = () => Math.floor(Date.now() / 1000);
    const claims = (over = {}) => ({
      iss: ISSUER,
      aud: RESOURCE,
      sub: 'e2e',
      iat: now(),
      exp: now() + 600,
      jti: randomBytes(8).toString('hex'),
      [CLAIM]: ['alpha'],
      ...over,
    });

    before(async () => {
      server = await startHttpServer(config);
    });

    after(async () => {
      await server?.stop();
      w.cleanup();
    });

    test('a valid token for the agent gets through (the control)', async () => {
      const res = await rawPost(server.url('alpha'), initializeRequest, { token: signJwt(issuerKey, claims()) });
      assert.equal(res.status, 200, res.text);
    });

    test('no token: 401 whose challenge points at the protected-resource metadata, which names the issuer', async () => {
      const res = await rawPost(server.url('alpha'), initializeRequest);
      assert.equal(res.status, 401, res.text);
      const challenge = res.headers.get('www-authenticate') ?? '';
      const m = /resource_metadata="([^"]+)"/.exec(challenge);
      assert.ok(m, `WWW-Authenticate names resource_metadata: ${challenge}`);
      const metaUrl = new URL(m[1]);
      const meta = await fetch(`${server.base}${metaUrl.pathname}`);
      assert.equal(meta.status, 200);
      const doc = await meta.json();
      assert.equal(doc.resource, RESOURCE);
      assert.ok(doc.authorization_servers?.includes(ISSUER), JSON.stringify(doc));
    });

    const refusals = [
      ['expired', () => signJwt(issuerKey, claims({ exp: now() - 120, iat: now() - 900 })), /expire|token/i],
      ['for another audience', () => signJwt(issuerKey, claims({ aud: 'https://other.example/mcp' })), /audience|token/i],
      ['from another issuer', () => signJwt(issuerKey, claims({ iss: 'https://evil.example' })), /issuer|token/i],
      ['signed by another key', () => signJwt(otherKey, claims()), /signature|token/i],
      ['unsigned (alg none)', () => signJwt(issuerKey, claims(), { alg: 'none' }), /token|alg|signature/i],
      // Without `sub` every such token would be one user, sharing sessions and audit lines.
      ['without a subject', () => signJwt(issuerKey, claims({ sub: undefined })), /no subject \(sub\)/],
    ];
    for (const [what, token, re] of refusals) {
      test(`a token ${what}: 401`, async () => {
        const res = await rawPost(server.url('alpha'), initializeRequest, { token: token() });
        assert.equal(res.status, 401, res.text);
        assert.match(res.text, re, `the body says what is wrong: ${res.text}`);
      });
    }

    test('a valid token whose agents claim lacks the agent: 403', async () => {
      const res = await rawPost(server.url('alpha'), initializeRequest, { token: signJwt(issuerKey, claims({ [CLAIM]: ['beta'] })) });
      assert.equal(res.status, 403, res.text);
      assert.match(res.text, /agent/i);
    });
  });
}
