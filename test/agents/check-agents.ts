import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import * as otlpFake from '../fakes/otlp.ts';
import { addProvider } from '../helpers/gateway.ts';
import { at, readRecipes } from '../helpers/recipes.ts';
import { serviceBin, shellEnv, startService } from '../helpers/service.ts';

// `npm run check:agents` (opt-in, not part of `npm test`): the README's Claude Code and Codex CLI recipes run for
// real. Both agents are installed at pinned versions into a cache folder (~660 MB together), a service is
// started with fake upstreams behind it, and each agent runs headless with the recipes' settings, each in
// a throwaway home so it reads none of the user's own configuration, through `switchyard launch` and with the
// recipes that set it up by hand. Passes when each run exits 0, printed the fake's answer, and its call reached
// the fake through the service, and when no token of a launch is left. With traces on (W4.4), Claude Code's
// calls reach a fake OTLP collector as spans joined by its own session ID.

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
const collector = await otlpFake.start();
// Exports every 100 ms instead of the SDK's 5 s, so the check does not wait for the batch.
const svc = await startService({ env: { OTEL_BSP_SCHEDULE_DELAY: '100' } });
const t0 = Date.now();
let failed = false;
try {
  await addProvider(svc, { kind: 'anthropic', baseUrl: anthropic.baseUrl, credential: 'fake-anthropic-agents' });
  await addProvider(svc, { kind: 'openai', baseUrl: openai.baseUrl, credential: 'fake-openai-agents' });
  const traced = await svc.request('PATCH', '/v1/settings', {
    body: { traces: { enabled: true, endpoint: collector.endpoint } },
  });
  assert.equal(traced.status, 200, traced.text);

  // The recipes as written, with `switchyard` the CLI of this checkout finding this service, and the agent's
  // interactive session made a headless one: the bare command replaced, or, for `switchyard launch`, the
  // agent's arguments added after `--`. Each agent runs in a throwaway home, so it reads none of the user's own
  // configuration (Codex's provider comes from the config recipe, or from launch's -c overrides).
  const agentHome = () => mkdtempSync(join(tmpdir(), 'switchyard-agent-home-'));
  const shell = (recipe: string, edit: (code: string) => string, extra: NodeJS.ProcessEnv) => {
    const code = edit(at(recipes.get(recipe)!, svc.url));
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
  const bare = (command: string, headless: string) => (code: string) =>
    code.replace(new RegExp(`^${command}$`, 'm'), headless);
  const launched = (agentArgs: string) => (code: string) =>
    code.replace(/^(switchyard launch .*)$/m, `$1 -- ${agentArgs}`);
  const CLAUDE_ARGS = "-p 'Say hello.' --output-format json";
  const CODEX_ARGS = "exec --skip-git-repo-check 'Say hello.'";

  /**
   * Claude Code's spans of one run: every `anthropic` span since `from` carries the session ID Claude Code printed
   * (`--output-format json`) as `gen_ai.conversation.id`.
   */
  async function joinedBySession(r: Run, from: number): Promise<boolean> {
    let session: string | undefined;
    try {
      session = (JSON.parse(r.stdout) as { session_id?: string }).session_id;
    } catch {}
    const mine = (spans: readonly otlpFake.ReceivedSpan[]) =>
      spans.slice(from).filter((x) => x.attributes['gen_ai.provider.name'] === 'anthropic');
    const spans = await collector.waitFor((all) => mine(all).length > 0).then(mine, () => []);
    const ids = [...new Set(spans.map((x) => x.attributes['gen_ai.conversation.id']))];
    const ok = session !== undefined && spans.length > 0 && ids.length === 1 && ids[0] === session;
    process.stdout.write(
      `claude-code spans joined by its session: ${ok ? 'ok' : 'FAILED'} (${spans.length} spans, ` +
        `conversation IDs ${ids.join(', ') || '-'}, Claude Code's session ${session ?? '-'})\n`,
    );
    return ok;
  }

  /** One headless run: ok when it exits 0, printed the fake's answer and its calls reached the fake. */
  async function check(label: string, agent: 'claude' | 'codex', go: () => Promise<Run>): Promise<boolean> {
    const fake = agent === 'claude' ? anthropic : openai;
    const path = agent === 'claude' ? '/messages' : '/responses';
    const calls = fake.requests.length;
    const spansBefore = collector.spans.length;
    const lines = svc.logLines().length;
    const started = Date.now();
    const r = await go();
    const ms = Date.now() - started;
    const reached = fake.requests.slice(calls).filter((q) => q.path.endsWith(path));
    const text = agent === 'claude' ? CLAUDE_TEXT : CODEX_TEXT;
    const ok = r.status === 0 && r.stdout.includes(text) && reached.length > 0;
    // What the service saw of the run: Codex tries its WebSocket (GET /v1/responses) before it POSTs.
    const seen = svc.logLines().slice(lines);
    const inference = (l: Record<string, unknown>) => /^POST \/v1\/(messages|responses)$/.test(String(l.route));
    const firstCall = seen.find(inference);
    const firstMs = firstCall ? Date.parse(String(firstCall.time)) - started : null;
    const gets = new Map<string, number>();
    for (const l of seen.filter((l) => l.method === 'GET'))
      gets.set(`${l.route} ${l.status}`, (gets.get(`${l.route} ${l.status}`) ?? 0) + 1);
    const others = [...gets].map(([what, n]) => `${n} x ${what}`);
    const models = [...new Set(reached.map((q) => (q.json as { model?: string })?.model))];
    process.stdout.write(
      `${label}: ${ok ? 'ok' : 'FAILED'} (exit ${r.status}, ${(ms / 1000).toFixed(1)} s, ${reached.length} calls ` +
        `reached the fake, models ${models.join(', ')}` +
        `; first inference call after ${firstMs === null ? '-' : `${(firstMs / 1000).toFixed(1)} s`}` +
        `${others.length ? `; GETs: ${others.join(', ')}` : ''})\n`,
    );
    if (!ok) process.stdout.write(`${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}\n`);
    if (agent === 'claude' && !(await joinedBySession(r, spansBefore))) return false;
    return ok;
  }
  const claudeEnv = () => {
    const home = agentHome();
    return { HOME: home, CLAUDE_CONFIG_DIR: join(home, '.claude') };
  };
  const codexEnv = (config: boolean) => {
    const home = agentHome();
    mkdirSync(join(home, '.codex'));
    if (config) writeFileSync(join(home, '.codex', 'config.toml'), at(recipes.get('codex-config')!, svc.url) + '\n');
    return { HOME: home, CODEX_HOME: join(home, '.codex') };
  };

  /**
   * Codex on an Anthropic-style model (W4.1), launched, so over its WebSocket: the fake calls Codex's shell tool
   * once, Codex runs it and sends the result back, the fake answers. Ok when both calls reached the fake over the
   * socket, the second with the command's output as its tool result, and each usage line holds the fake's usage
   * exactly (31 input + 3 cache writes + 8 cache reads, 17 output).
   */
  async function codexOnClaude(): Promise<boolean> {
    const marker = 'switchyard-shell-round-trip';
    anthropic.setOutput({
      text: CLAUDE_TEXT,
      toolCalls: [{ name: 'exec_command', arguments: { cmd: `echo ${marker}` } }],
      toolCallsUntilResult: true,
    });
    const calls = anthropic.requests.length;
    const lines = svc.logLines().length;
    const started = Date.now();
    const args = `exec --skip-git-repo-check 'Run the shell command: echo ${marker}'`;
    const launch = (code: string) =>
      launched(args)(code.replace(/(switchyard launch codex.*)--model \S+/, '$1--model anthropic/claude-sonnet-4-5'));
    const r = await shell('codex', launch, codexEnv(false));
    anthropic.setOutput({ text: CLAUDE_TEXT, toolCalls: 'none', toolCallsUntilResult: false });
    const ms = Date.now() - started;
    const reached = anthropic.requests.slice(calls).filter((q) => q.path.endsWith('/messages'));
    const seen = svc.logLines().slice(lines);
    const overSocket = seen.some((l) => String(l.route).endsWith('(WebSocket)') && l.status === 101);
    const usage = seen.filter((l) => l.msg === 'usage' && l.op === 'responses.create').map((l) => l.usage);
    const exact = usage.every((u) => {
      const { inputTokens, outputTokens, cachedInputTokens } = u as Record<string, number>;
      return inputTokens === 42 && outputTokens === 17 && cachedInputTokens === 8;
    });
    const result = JSON.stringify(reached[1]?.json ?? null).includes(marker);
    const ok =
      r.status === 0 && r.stdout.includes(CLAUDE_TEXT) && reached.length === 2 && result && exact && overSocket;
    process.stdout.write(
      `codex on claude (launch, shell tool): ${ok ? 'ok' : 'FAILED'} (exit ${r.status}, ${(ms / 1000).toFixed(1)} s, ` +
        `${reached.length} calls reached the fake, tool result sent back: ${result}, over the WebSocket: ` +
        `${overSocket}, usage lines ${JSON.stringify(usage)})\n`,
    );
    if (!ok) process.stdout.write(`${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}\n`);
    return ok;
  }

  const results = [
    await check('claude-code (launch)', 'claude', () => shell('claude-code', launched(CLAUDE_ARGS), claudeEnv())),
    await check('codex (launch)', 'codex', () => shell('codex', launched(CODEX_ARGS), codexEnv(false))),
    await check('claude-code (env)', 'claude', () =>
      shell('claude-code-env', bare('claude', `claude ${CLAUDE_ARGS}`), claudeEnv()),
    ),
    await check('codex (config)', 'codex', () =>
      shell('codex-env', bare('codex', `codex ${CODEX_ARGS}`), codexEnv(true)),
    ),
  ];
  results.push(await codexOnClaude());
  // Each launch revoked its token: none of theirs is live.
  const tokens = (await svc.request('GET', '/v1/tokens')).json.data as { id: string; name: string }[];
  const left = tokens.filter((t) => t.name.startsWith('launch '));
  process.stdout.write(
    `launch tokens left: ${left.length}${left.length ? ` (${left.map((t) => t.name).join(', ')})` : ''}\n`,
  );
  failed = results.includes(false) || left.length > 0;
} finally {
  await svc.stop();
  await anthropic.close();
  await openai.close();
  await collector.close();
}
process.stdout.write(`check:agents: ${((Date.now() - t0) / 1000).toFixed(1)} s in all\n`);
process.exit(failed ? 1 : 0);
