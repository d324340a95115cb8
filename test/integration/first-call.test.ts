import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import { addProvider } from '../helpers/gateway.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';
import { at, readRecipes } from '../helpers/recipes.ts';

// W3.3 item 3: the README's "First call" recipes, read from the README itself and run as a person would run
// them (curl in a shell, each SDK snippet as a module of its own in a separate process) against a service with
// fake upstreams; the service's address replaces 127.0.0.1:3939. The agents' recipes are run by
// `npm run check:agents` (test/agents/check-agents.ts), not here.

const RUN_DIR = new URL('../../test-output/recipes/', import.meta.url);
const OPENAI_KEY = `fake-openai-recipes-${process.pid}`;
const ANTHROPIC_KEY = `fake-anthropic-recipes-${process.pid}`;
const OPENAI_TEXT = 'Hello from the OpenAI-style fake.';
const ANTHROPIC_TEXT = 'Hello from the Anthropic-style fake.';

let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let an: anthropicFake.AnthropicFake;
let token: string;
const recipes = readRecipes();

before(async () => {
  oa = await openaiFake.start({ apiKey: OPENAI_KEY });
  oa.setModels([{ id: 'gpt-4o-mini' }]);
  oa.setOutput({ text: OPENAI_TEXT });
  an = await anthropicFake.start({ apiKey: ANTHROPIC_KEY });
  an.setModels([{ id: 'claude-sonnet-4-5' }]);
  an.setOutput({ text: ANTHROPIC_TEXT });
  svc = await startInProcess();
  assert.equal(await addProvider(svc, { kind: 'openai', baseUrl: oa.baseUrl, credential: OPENAI_KEY }), 1);
  assert.equal(await addProvider(svc, { kind: 'anthropic', baseUrl: an.baseUrl, credential: ANTHROPIC_KEY }), 1);
  // What `switchyard tokens create my-app --scopes inference` prints.
  const created = await svc.request('POST', '/v1/tokens', { body: { name: 'my-app', scopes: ['inference'] } });
  assert.equal(created.status, 201, created.text);
  svc.markSecretBearing(created);
  token = created.json.secret as string;
  mkdirSync(RUN_DIR, { recursive: true });
});
after(async () => {
  await svc?.stop();
  await oa?.close();
  await an?.close();
});

/** A recipe's code with this service's address, run without blocking this process (it serves the fakes). */
function run(name: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const recipe = recipes.get(name);
  assert.ok(recipe, `README has the ${name} recipe`);
  const code = at(recipe, svc.url);
  let command: string[];
  if (recipe.lang === 'js') {
    // Inside the checkout, so that `import ... from 'openai'` resolves as it does in a project that installed it.
    const file = new URL(`${name}.mjs`, RUN_DIR);
    writeFileSync(file, code);
    command = [process.execPath, file.pathname];
  } else {
    assert.equal(recipe.lang, 'sh');
    command = ['bash', '-euo', 'pipefail', '-c', code];
  }
  const child = spawn(command[0]!, command.slice(1), {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, SWITCHYARD_TOKEN: token },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
}

test("the README has every recipe, the agents' ones included", () => {
  assert.deepEqual([...recipes.keys()].sort(), [
    'anthropic-sdk',
    'claude-code',
    'claude-code-env',
    'codex',
    'codex-config',
    'codex-env',
    'curl',
    'openai-sdk',
  ]);
});

test('curl: an OpenAI-style call with the token answers as the upstream did', async () => {
  const r = await run('curl');
  assert.equal(r.status, 0, r.stderr);
  const body = JSON.parse(r.stdout) as { choices: { message: { content: string } }[]; model: string };
  assert.equal(body.choices[0]!.message.content, OPENAI_TEXT);
  assert.equal((oa.requests.at(-1)!.json as { model: string }).model, 'gpt-4o-mini', 'the upstream model ID');
});

test('the OpenAI SDK recipe prints the answer', async () => {
  const r = await run('openai-sdk');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), OPENAI_TEXT);
});

test('the Anthropic SDK recipe prints the answer', async () => {
  const r = await run('anthropic-sdk');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), ANTHROPIC_TEXT);
  assert.equal((an.requests.at(-1)!.json as { model: string }).model, 'claude-sonnet-4-5');
});

test('a recipe run with a revoked token is refused, and no output holds a key', async () => {
  const list = await svc.request('GET', '/v1/tokens');
  const id = (list.json.data as { id: string; name: string }[]).find((t) => t.name === 'my-app')!.id;
  assert.equal((await svc.request('DELETE', `/v1/tokens/${id}`)).status, 200);
  const r = await run('openai-sdk');
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /401/);
  for (const text of [r.stdout, r.stderr, svc.log(), svc.responsesText()])
    for (const secret of [OPENAI_KEY, ANTHROPIC_KEY, token]) assert.ok(!text.includes(secret));
});
