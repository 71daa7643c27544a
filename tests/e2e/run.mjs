// ctest entry point: checks that the MCP clients (1.x SDK, 2.x client) are installed, then runs the
// given test files with node's built-in test runner. With --docker, exits 77 (ctest "skipped") when no
// engine or image is there, unless EXECMCP_REQUIRE_DOCKER=1.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const docker = args[0] === '--docker';
const files = docker ? args.slice(1) : args;

const missing = ['sdk', 'client'].filter(
  (p) => !fs.existsSync(path.join(here, 'node_modules', '@modelcontextprotocol', p, 'package.json')),
);
if (missing.length > 0) {
  console.error(
    `execmcp e2e: the MCP clients (${missing.map((p) => `@modelcontextprotocol/${p}`).join(', ')}) are not installed in ${here}/node_modules.\n` +
      `Run:  (cd ${here} && npm ci)   — scripts/test.sh does this before ctest.`,
  );
  process.exit(1);
}
if (!process.env.EXECMCP_BIN || !fs.existsSync(process.env.EXECMCP_BIN)) {
  console.error(`execmcp e2e: EXECMCP_BIN does not name a built execmcp (${process.env.EXECMCP_BIN ?? 'unset'})`);
  process.exit(1);
}

if (docker) {
  const image = process.env.EXECMCP_DOCKER_IMAGE || 'execmcp/runtime:latest';
  let why = '';
  const info = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 20000 });
  if (info.error || info.status !== 0) why = 'no Docker engine answers (scripts/docker-engine.sh start)';
  else if (spawnSync('docker', ['image', 'inspect', image], { timeout: 20000 }).status !== 0)
    why = `image ${image} is missing (docker/build.sh)`;
  if (why) {
    console.error(`execmcp e2e docker: ${why}`);
    process.exit(process.env.EXECMCP_REQUIRE_DOCKER === '1' ? 1 : 77);
  }
}

const child = spawn(process.execPath, ['--test', '--test-concurrency=1', ...files], { stdio: 'inherit', cwd: here });
child.on('exit', (code, signal) => process.exit(signal ? 1 : code));
