import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import { addProvider } from '../helpers/gateway.ts';
import { at, readRecipes } from '../helpers/recipes.ts';
import { serviceBin, shellEnv, startService } from '../helpers/service.ts';

// `npm run check:agents` (opt-in, not part of `npm test`): the README's Claude Code and Codex CLI recipes run for
// real. Both agents are installed at pinned versions into a cache folder (~660 MB together), a service is
// started with fake upstreams behind it, and each agent runs once headless with the recipe's settings, each in
// a throwaway home so it reads none of the user's own configuration. Passes when each agent exits 0, printed
// the fake's answer, and its call reached the fake through the service.

const CACHE = process.env.SWITCHYARD_AGENTS_CACHE ?? join(homedir(), '.cache', 'switchyard-agents');
const AGENTS = ['@anthropic-ai/claude-code@2.1.332', '@openai/codex@0.171.0'];
const RUN_MS = Number(process.env.SWITCHYARD_AGENTS_TIMEOUT_MS ?? 180_000);
const CLAUDE_TEXT = 'Hello from the Anthropic-style fake, through Switchyard.';
const CODEX_TEXT = 'Hello from the OpenAI-style fake, through Switchyard.';

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, quiet = true): Promise<Run> {
  const child = spawn(command, args, {
    env,
    stdio: ['ignore', quiet ? 'pipe' : 'inherit', quiet ? 'pipe' : 'inherit'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), RUN_MS);
  return new Promise((resolve) =>
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    }),
  );
}

async function install(): Promise<void> {
  const stamp = join(CACHE, 'installed.json');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === JSON.stringify(AGENTS)) return;
  mkdirSync(CACHE, { recursive: true });
  process.stderr.write(`check:agents: installing ${AGENTS.join(', ')} into ${CACHE}\n`);
  const npm = await run(
    'npm',
    ['install', '--prefix', CACHE, '--no-audit', '--no-fund', ...AGENTS],
    process.env,
    false,
  );
  assert.equal(npm.status, 0, 'npm install of the agents failed');
  writeFileSync(stamp, JSON.stringify(AGENTS));
}

await install();
const recipes = readRecipes();
const anthropic = await anthropicFake.start({ apiKey: 'fake-anthropic-agents' });
anthropic.setModels([{ id: 'claude-sonnet-4-5' }, { id: 'claude-haiku-4-5' }]);
// An agent sends its tools with every call; a fake that called them would keep it in its loop.
anthropic.setOutput({ text: CLAUDE_TEXT, toolCalls: 'none' });
const openai = await openaiFake.start({ apiKey: 'fake-openai-agents' });
openai.setModels([{ id: 'gpt-5-codex' }]);
openai.setOutput({ text: CODEX_TEXT, toolCalls: 'none' });
const svc = await startService();
let failed = false;
try {
  await addProvider(svc, { kind: 'anthropic', baseUrl: anthropic.baseUrl, credential: 'fake-anthropic-agents' });
  await addProvider(svc, { kind: 'openai', baseUrl: openai.baseUrl, credential: 'fake-openai-agents' });

  // The recipes as written, with `switchyard` the CLI of this checkout finding this service, and the agent's
  // bare command (an interactive session) made a headless one.
  const agentHome = () => mkdtempSync(join(tmpdir(), 'switchyard-agent-home-'));
  const shell = (recipe: string, bare: string, headless: string, extra: NodeJS.ProcessEnv) => {
    const code = at(recipes.get(recipe)!, svc.url).replace(new RegExp(`^${bare}$`, 'm'), headless);
    const prelude = `switchyard() { ${JSON.stringify(process.execPath)} ${JSON.stringify(serviceBin())} "$@"; }\n`;
    return run('bash', ['-euo', 'pipefail', '-c', prelude + code], {
      ...shellEnv(svc.home),
      PATH: `${join(CACHE, 'node_modules', '.bin')}:${process.env.PATH}`,
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      ...extra,
    });
  };

  const claudeHome = agentHome();
  const claude = await shell('claude-code', 'claude', "claude -p 'Say hello.' --output-format json", {
    HOME: claudeHome,
    CLAUDE_CONFIG_DIR: join(claudeHome, '.claude'),
  });
  const claudeCalls = anthropic.requests.filter((r) => r.path.endsWith('/messages'));
  const claudeOk = claude.status === 0 && claude.stdout.includes(CLAUDE_TEXT) && claudeCalls.length > 0;
  process.stdout.write(
    `claude-code: ${claudeOk ? 'ok' : 'FAILED'} (exit ${claude.status}, ${claudeCalls.length} calls reached the fake` +
      `, models ${[...new Set(claudeCalls.map((r) => (r.json as { model?: string })?.model))].join(', ')})\n`,
  );
  if (!claudeOk) process.stdout.write(`${claude.stdout.slice(-2000)}\n${claude.stderr.slice(-2000)}\n`);

  const codexHome = agentHome();
  mkdirSync(join(codexHome, '.codex'));
  writeFileSync(join(codexHome, '.codex', 'config.toml'), at(recipes.get('codex-config')!, svc.url) + '\n');
  const codex = await shell('codex', 'codex', "codex exec --skip-git-repo-check 'Say hello.'", {
    HOME: codexHome,
    CODEX_HOME: join(codexHome, '.codex'),
  });
  const codexCalls = openai.requests.filter((r) => r.path.endsWith('/responses'));
  const codexOk = codex.status === 0 && codex.stdout.includes(CODEX_TEXT) && codexCalls.length > 0;
  process.stdout.write(
    `codex: ${codexOk ? 'ok' : 'FAILED'} (exit ${codex.status}, ${codexCalls.length} calls reached the fake)\n`,
  );
  if (!codexOk) process.stdout.write(`${codex.stdout.slice(-2000)}\n${codex.stderr.slice(-2000)}\n`);
  failed = !claudeOk || !codexOk;
} finally {
  await svc.stop();
  await anthropic.close();
  await openai.close();
}
process.exit(failed ? 1 : 0);
