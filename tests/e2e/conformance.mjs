// Runs the official MCP conformance suite (@modelcontextprotocol/conformance, on the Node 22 that
// scripts/install-node22.sh puts in node22/) against `execmcp serve --http`: every server
// scenario that applies to a tools-only server, on each protocol revision it covers. The plan and
// the reasons for each skipped scenario are below and in tests/README.md; a scenario the suite
// has that is neither planned nor skipped fails the run, so a suite upgrade cannot hide one.
//   node conformance.mjs [--list] [--scenario NAME]...
// Exit 0: all planned runs pass; 77: skipped (this execmcp has no --http); 1: failures.
// EXECMCP_CONFORMANCE_SERVER_ARGS: extra `execmcp serve` arguments (split on spaces).
// EXECMCP_CONFORMANCE_RESULTS: keep the suite's checks.json files there (default: a temp dir,
// removed when everything passed).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const node22 = path.join(here, 'node22', 'node_modules', '.bin', 'node');
const suite = path.join(here, 'node22', 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const baseline = path.join(here, 'conformance-baseline.yml');
const SKIP = 77;

// What runs, per wire revision. 2025-06-18 is what execmcp spoke before issue 8 (clients of that
// era must keep working), 2025-11-25 the last stateful revision, 2026-07-28 the stateless one.
export const PLAN = [
  { spec: '2025-06-18', scenarios: ['server-initialize', 'ping', 'tools-list'] },
  {
    spec: '2025-11-25',
    scenarios: ['server-initialize', 'server-session-lifecycle', 'ping', 'tools-list', 'server-sse-multiple-streams', 'dns-rebinding-protection'],
  },
  {
    spec: '2026-07-28',
    scenarios: ['server-stateless', 'tools-list', 'caching', 'http-header-validation', 'server-sse-multiple-streams', 'dns-rebinding-protection'],
  },
];

// The suite's reference server has fixture tools (test_simple_text, test_image_content, ...) that
// many scenarios call by name; a real server has its own tools instead.
const fixture = (tools) => `calls the suite's fixture tool${tools.includes(',') ? 's' : ''} ${tools}, which only its reference server has; execmcp's own tools are tested by tests/e2e`;
const PREFIX_SKIPS = [
  ['tools-call-', fixture('test_simple_text, test_image_content, test_error_handling, test_tool_with_progress, ...')],
  ['input-required-result-', fixture('test_input_required_result_*') + ' (execmcp never asks the client for input)'],
  ['resources-', 'execmcp offers no resources (a tools-only server)'],
  ['prompts-', 'execmcp offers no prompts (a tools-only server)'],
  ['tasks-', 'the tasks extension is optional (SEP-1730) and execmcp does not implement it'],
  ['sep-2640-skills-', 'the skills extension is optional and execmcp does not implement it'],
];
export const SKIPPED = {
  'logging-set-level': 'execmcp does not declare the logging capability (its logs go to stderr and the audit file)',
  'completion-complete': 'completion/complete completes prompt and resource-template arguments; execmcp has neither',
  'sep-2164-resource-not-found': 'execmcp offers no resources',
  'json-schema-2020-12': fixture('test_json_schema_2020_12'),
  'elicitation-sep1034-defaults': fixture('test_elicitation_sep1034_defaults') + ' (execmcp never asks the client for input)',
  'elicitation-sep1330-enums': fixture('test_elicitation_sep1330_enums') + ' (execmcp never asks the client for input)',
  'server-sse-polling': fixture('test_reconnection'),
  'http-custom-header-server-validation': fixture('test_custom_headers') + " (execmcp's tools declare no x-mcp-header parameters)",
};

export function skipReason(scenario) {
  if (SKIPPED[scenario]) return SKIPPED[scenario];
  for (const [prefix, why] of PREFIX_SKIPS) if (scenario.startsWith(prefix)) return why;
  return undefined;
}

function suiteScenarios() {
  const out = spawnSync(node22, [suite, 'list', '--server'], { encoding: 'utf8', timeout: 60000 });
  if (out.status !== 0) throw new Error(`conformance list failed: ${out.stderr}`);
  return [...out.stdout.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]);
}

function checkPlanCoversSuite(all) {
  const planned = new Set(PLAN.flatMap((p) => p.scenarios));
  const unknown = [...planned].filter((s) => !all.includes(s));
  const uncovered = all.filter((s) => !planned.has(s) && !skipReason(s));
  const problems = [];
  if (unknown.length) problems.push(`planned but not in the suite: ${unknown.join(', ')}`);
  if (uncovered.length) problems.push(`in the suite but neither planned nor skipped with a reason: ${uncovered.join(', ')}`);
  return problems;
}

function runScenario(url, spec, scenario, resultsDir) {
  return new Promise((resolve) => {
    const args = [suite, 'server', '--url', url, '--scenario', scenario, '--spec-version', spec, '--expected-failures', baseline, '-o', resultsDir];
    const child = spawn(node22, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 180000);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ ok: code === 0, code, signal, out });
    });
  });
}

async function main() {
  const argv = process.argv.slice(2);
  const only = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--scenario') only.push(argv[++i]);
    else if (argv[i] !== '--list') {
      console.error(`conformance.mjs: unknown argument ${argv[i]}`);
      return 2;
    }
  }

  if (!fs.existsSync(node22) || !fs.existsSync(suite)) {
    console.error(`execmcp conformance: Node 22 and the conformance suite are not installed in ${here}/node22.\nRun:  scripts/install-node22.sh   (npm ci in tests/e2e runs it too)`);
    return 1;
  }
  const all = suiteScenarios();
  const problems = checkPlanCoversSuite(all);

  if (argv.includes('--list')) {
    for (const p of PLAN) console.log(`run at ${p.spec}: ${p.scenarios.join(', ')}`);
    for (const s of all.filter((s) => skipReason(s))) console.log(`skip ${s}: ${skipReason(s)}`);
    for (const p of problems) console.log(`PROBLEM: ${p}`);
    return problems.length ? 1 : 0;
  }
  if (problems.length) {
    for (const p of problems) console.error(`execmcp conformance: ${p} (update PLAN/SKIPPED in conformance.mjs and tests/README.md)`);
    return 1;
  }

  // Loaded here so that --list works without a built execmcp.
  const { makeWorkspace } = await import('./lib/harness.mjs');
  const { httpSupport, sharedConfig, startHttpServer } = await import('./lib/http.mjs');
  const support = httpSupport();
  if (!support.ok) {
    console.error(`execmcp conformance: SKIPPED: ${support.why}`);
    return SKIP;
  }

  const w = makeWorkspace();
  const resultsDir = process.env.EXECMCP_CONFORMANCE_RESULTS || fs.mkdtempSync(path.join(os.tmpdir(), 'execmcp-conformance-'));
  // The suite cannot send credentials, so the server runs without tokens - on loopback only,
  // which is also the case dns-rebinding-protection is about.
  const config = sharedConfig(w, { agents: ['conformance'] });
  const extra = (process.env.EXECMCP_CONFORMANCE_SERVER_ARGS || '').split(' ').filter(Boolean);
  let server;
  const failed = [];
  try {
    server = await startHttpServer(config, { args: extra });
    const url = server.url('conformance');
    console.log(`execmcp conformance: ${url}, suite ${JSON.parse(fs.readFileSync(path.join(path.dirname(suite), '..', 'package.json'))).version}, ${spawnSync(node22, ['--version'], { encoding: 'utf8' }).stdout.trim()}`);
    for (const { spec, scenarios } of PLAN) {
      for (const scenario of scenarios) {
        if (only.length && !only.includes(scenario)) continue;
        const r = await runScenario(url, spec, scenario, resultsDir);
        console.log(`${r.ok ? 'PASS' : 'FAIL'}  ${spec}  ${scenario}`);
        if (!r.ok) {
          failed.push(`${spec} ${scenario}`);
          console.log(r.out.replace(/\x1b\[[0-9;]*m/g, '').replace(/^/gm, '    '));
        }
        if (server.exited()) throw new Error(`execmcp exited during ${scenario}: ${JSON.stringify(server.exited())}`);
      }
    }
  } catch (err) {
    failed.push(`runner: ${err.message}`);
    console.log(err.message);
  } finally {
    const stopped = await server?.stop();
    if (stopped && (stopped.forced || stopped.code !== 0)) failed.push(`execmcp did not exit cleanly on SIGTERM: ${JSON.stringify(stopped)}`);
    if (failed.length && server) console.log(`--- execmcp stderr (last 20000 chars) ---\n${server.stderr().slice(-20000)}`);
    w.cleanup();
  }
  const skippedCount = all.filter((s) => skipReason(s)).length;
  if (failed.length) {
    console.log(`execmcp conformance: ${failed.length} failed: ${failed.join('; ')}\nchecks.json files: ${resultsDir}`);
    return 1;
  }
  if (!process.env.EXECMCP_CONFORMANCE_RESULTS) fs.rmSync(resultsDir, { recursive: true, force: true });
  console.log(`execmcp conformance: all planned scenarios pass (${skippedCount} not applicable, see tests/README.md)`);
  return 0;
}

process.exitCode = await main();
