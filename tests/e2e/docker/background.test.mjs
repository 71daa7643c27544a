// The background-shell tools on the docker-api backend (agent mode: through execmcp-runner in the
// agent's container): the shared suite of lib/background.mjs, with process checks made inside the
// container through execute_command.
import { spawnSync } from 'node:child_process';

import { backgroundSuite } from '../lib/background.mjs';
import { dockerAvailable } from '../lib/harness.mjs';

const IMAGE = process.env.EXECMCP_DOCKER_IMAGE || 'execmcp/runtime:latest';
const available = dockerAvailable(IMAGE);

backgroundSuite({
  name: 'docker-api',
  agent: `e2ebg${process.pid}`,
  skip: available.ok ? false : available.why,
  inContainer: true,
  backend: `    backend: {plugin: docker-api, settings: {image: ${JSON.stringify(IMAGE)}, exec_mode: agent}}\n`,
  // The server removes its container on shutdown; make sure, so a failure leaves no orphan.
  cleanup(agent) {
    const ids = spawnSync('docker', ['ps', '-aq', '--filter', `name=${agent}`], { encoding: 'utf8' }).stdout.trim();
    if (ids) spawnSync('docker', ['rm', '-f', ...ids.split(/\s+/)]);
  },
});

// exec_mode: exec (one Engine exec per call, no runner): the shell's pid may be unknown.
backgroundSuite({
  name: 'docker-api, exec_mode: exec',
  agent: `e2ebgx${process.pid}`,
  skip: available.ok ? false : available.why,
  inContainer: true,
  pidKnown: false,
  backend: `    backend: {plugin: docker-api, settings: {image: ${JSON.stringify(IMAGE)}, exec_mode: exec}}\n`,
  cleanup(agent) {
    const ids = spawnSync('docker', ['ps', '-aq', '--filter', `name=${agent}`], { encoding: 'utf8' }).stdout.trim();
    if (ids) spawnSync('docker', ['rm', '-f', ...ids.split(/\s+/)]);
  },
});
