// The example configs of configs/ through `execmcp check-config`, as a user first tries them: each
// prints OK and exits 0 (the files a config names, e.g. massgen-full-dev.yaml's env_file, made in a
// temp directory first).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

import { EXECMCP_BIN, makeWorkspace, serverEnv } from './lib/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const configsDir = path.resolve(here, '..', '..', 'configs');

const SECRET = `ghp_e2e${process.pid}canary`;

// Each config with what it needs to exist; env: extra environment (paths under the temp root).
const CONFIGS = [
  { file: 'docker-attach.yaml' },
  {
    file: 'massgen-full-dev.yaml',
    // env_file: ${EXECMCP_ENV_FILE:-.env} with GITHUB_TOKEN in it; the additional mount's source.
    prepare(w) {
      const envFile = path.join(w.root, 'full-dev.env');
      fs.writeFileSync(envFile, `# secrets for the agent\nGITHUB_TOKEN="${SECRET}"\nOTHER=1\n`);
      fs.mkdirSync(path.join(w.ws, 'datasets'), { recursive: true });
      fs.mkdirSync(path.join(w.ws, 'dev'), { recursive: true });
      // mount: [ssh_keys, git_config] name the operator's ~/.ssh and ~/.gitconfig.
      const home = path.join(w.root, 'home');
      fs.mkdirSync(path.join(home, '.ssh'), { recursive: true });
      fs.writeFileSync(path.join(home, '.gitconfig'), '[user]\n\tname = e2e\n');
      return { EXECMCP_ENV_FILE: envFile, HOME: home };
    },
  },
  { file: 'local-background.yaml', says: /agent '[^']+': background shells on \(at most \d+ running\)/ },
  { file: 'per-user.yaml', says: /per user: a sandbox per authenticated HTTP user, at most 200;.*; calls per user: 16$/m },
  {
    file: 'swarm.yaml',
    says: /each sandbox a Swarm service of one task on its own internal overlay network, reached only through its runner \(no exec\)\n.*constraints \[node\.role==worker\]\n.*per user: a sandbox per authenticated HTTP user, at most 200;.*; 2 warm;/,
  },
  {
    file: 'docker-egress.yaml',
    says: /network: egress, only through the agent's own proxy, to: pypi\.org, files\.pythonhosted\.org, registry\.npmjs\.org, github\.com, \*\.githubusercontent\.com; ports 80, 443; upstream network bridge/,
  },
];

describe('check-config of the example configs', () => {
  let w;

  before(() => {
    w = makeWorkspace();
  });

  after(() => {
    w?.cleanup();
  });

  for (const { file, prepare, says } of CONFIGS) {
    test(`execmcp check-config configs/${file} prints OK`, () => {
      const env = serverEnv({ EXECMCP_WORKSPACE: w.ws, ...(prepare?.(w) ?? {}) });
      const r = spawnSync(EXECMCP_BIN, ['check-config', path.join(configsDir, file)], {
        encoding: 'utf8',
        env,
        cwd: w.root,
        timeout: 60000,
      });
      const said = `exit ${r.status}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
      assert.equal(r.status, 0, said);
      assert.match(r.stdout, /: OK\b/, said);
      if (says) assert.match(r.stdout, says, said);
      assert.ok(!`${r.stdout}${r.stderr}`.includes(SECRET), 'no secret of the env_file is printed');
    });
  }
});
