import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { paidUser, startCopilotGaugeFake, type CopilotGaugeFake } from '../fakes/gauge/github-copilot.ts';
import * as openaiFake from '../fakes/openai.ts';
import { writeTinyModel } from '../helpers/gguf.ts';
import { shellEnv, startService, tempHome, type TestService } from '../helpers/service.ts';
import { cliRunner, type Run } from '../helpers/cli-run.ts';

// The set-up commands beyond providers, models and tokens (cli/dispatch-setup.ts), run as a person runs them:
// the executable in a separate process against one real service for the whole file, each command's effect
// checked through the API afterwards. Bodies come from JSON and YAML files; a Gauge account's key from stdin
// or a hidden prompt in a pseudo-terminal (util-linux script); no output holds a key.

const KEY = `sk-more-${process.pid}-0123456789abcdef`;
const COPILOT_KEY = `ghu_more${process.pid}0123456789abcdefABCDEF`;
const ROUTER_KEY = `sk-or-v1-more-${process.pid}-0123456789abcdef`;
const FAKES = fileURLToPath(new URL('../fakes/llama-server/', import.meta.url));
let svc: TestService;
let fake: openaiFake.OpenAIFake;
let copilot: CopilotGaugeFake;
let env: NodeJS.ProcessEnv;
let files: string;

const { cli, ok, inPty, printed } = cliRunner(() => env);

/** Runs `args` and expects exit `status` with stderr matching `message`. */
async function fails(args: string[], status: number, message: RegExp): Promise<Run> {
  const r = await cli(args);
  assert.equal(r.status, status, `switchyard ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  assert.match(r.stderr, message);
  return r;
}

/** Each of `cases` as `fails` checks it, a few at a time: the commands change nothing, so order does not matter. */
async function refusals(cases: [string[], number, RegExp][]): Promise<void> {
  const queue = [...cases];
  const worker = async () => {
    for (let c = queue.shift(); c !== undefined; c = queue.shift()) await fails(...c);
  };
  await Promise.all([worker(), worker(), worker()]);
}

function file(name: string, text: string): string {
  const path = join(files, name);
  writeFileSync(path, text);
  return path;
}

before(async () => {
  const home = tempHome();
  files = join(home, 'bodies');
  mkdirSync(files);
  mkdirSync(join(home, 'models'));
  writeTinyModel(join(home, 'models', 'tiny.gguf'));
  fake = await openaiFake.start({ apiKey: KEY });
  fake.setModels([{ id: 'gpt-more' }, { id: 'gpt-spare' }]);
  copilot = await startCopilotGaugeFake({ token: COPILOT_KEY });
  copilot.setUser(
    paidUser({
      snapshots: {
        premium_interactions: { entitlement: 300, remaining: 180, percent_remaining: 60, unlimited: false },
      },
      resetDate: new Date(Date.now() + 5 * 86_400_000 + 3_600_000).toISOString(),
    }),
  );
  svc = await startService({
    home,
    env: {
      PATH: `${FAKES}${delimiter}${process.env.PATH ?? ''}`,
      SWITCHYARD_SERVICE_TIMING: JSON.stringify({ healthEveryMs: 100, stopGraceMs: 300 }),
    },
  });
  env = shellEnv(home);
  const added = await svc.request('POST', '/v1/providers', {
    body: { kind: 'openai', baseUrl: fake.baseUrl, credential: KEY },
  });
  assert.equal(added.status, 201, added.text);
  assert.equal((await svc.request('POST', '/v1/providers/openai/actions/refresh-models')).status, 200);
});

after(async () => {
  for (const text of printed) {
    for (const key of [KEY, COPILOT_KEY, ROUTER_KEY]) assert.ok(!text.includes(key), 'a command printed a key');
    assert.ok(!text.includes(svc.adminToken), 'a command printed the admin token');
  }
  await svc?.stop();
  await fake?.close();
  await copilot?.close();
});

describe('presets', () => {
  test('add from YAML, list, remove; the preset is callable as a model', async () => {
    const yaml = file(
      'brief.yaml',
      [
        '# a preset, as docs/api.md describes its body',
        'slug: brief',
        'displayName: Brief GPT',
        'model: openai/gpt-more',
        'familyScope: [styleA.chat_completions]',
        'parameters:',
        '  temperature: 0.2',
        'system: Be brief.',
      ].join('\n'),
    );
    assert.match(
      await ok(['presets', 'add', yaml]),
      /^Added preset brief \(openai\/gpt-more\); call it as .*@preset\/brief/,
    );
    const preset = (await svc.request('GET', '/v1/presets/brief')).json;
    assert.deepEqual(preset.parameters, { temperature: 0.2 });
    assert.equal(preset.system, 'Be brief.');
    const listed = await ok(['presets']);
    assert.match(listed, /^SLUG\s+NAME\s+MODEL\s+FOR/);
    assert.match(listed, /brief\s+Brief GPT\s+openai\/gpt-more\s+OpenAI-style chat completions\s+temperature\s+yes/);
    assert.ok(!listed.includes('styleA'), listed);
    assert.equal(JSON.parse(await ok(['presets', 'list', '--json'])).data[0].slug, 'brief');
    // JSON is read as JSON whatever the name.
    const json = file(
      'terse.txt',
      JSON.stringify({ slug: 'terse', model: 'openai/gpt-more', familyScope: ['styleA.chat_completions'] }),
    );
    assert.equal(JSON.parse(await ok(['presets', 'add', json, '--json'])).slug, 'terse');
    assert.match(await ok(['presets', 'remove', 'terse']), /^Removed preset terse\.$/m);
    assert.equal((await svc.request('GET', '/v1/presets/terse')).status, 404);
    assert.equal((await svc.request('GET', '/v1/presets/brief')).status, 200);
  });

  test('bad files are usage errors naming the file; the service refusing is exit 1', async () => {
    const wrong = file('wrong.yaml', 'slug: wrong\nmodel: openai/none\nfamilyScope: [styleA.chat_completions]\n');
    await refusals([
      [['presets', 'add', join(files, 'missing.yaml')], 2, /Cannot read .*missing\.yaml: ENOENT/],
      [
        ['presets', 'add', file('bad.yaml', 'slug: [unclosed\nmodel: x\n')],
        2,
        /bad\.yaml is not valid YAML: .* at line \d+, column \d+\.$/m,
      ],
      [['presets', 'add', file('list.json', '[1, 2]')], 2, /must hold one object/],
      [['presets', 'add', file('prose.txt', 'just some words')], 2, /must hold one object/],
      [['presets', 'add', file('big.json', `{"slug": "${'x'.repeat(1_100_000)}"}`)], 2, /over 1 MiB/],
      [['presets', 'add', files], 2, /is not a file/],
      [['presets', 'add', wrong], 1, /^switchyard presets: .*model/],
      [['presets', 'remove', 'nothing-here'], 1, /^switchyard presets: /],
      [['presets', 'frobnicate'], 2, /Usage: switchyard presets/],
      [['presets', 'add'], 2, /Usage: switchyard presets/],
    ]);
    assert.equal((await svc.request('GET', '/v1/presets')).json.data.length, 1, 'nothing else was saved');
  });
});

describe('route packs', () => {
  test('add from JSON, list, remove', async () => {
    const body = {
      slug: 'pair',
      displayName: 'Pair',
      routes: [
        { id: 'first', model: 'openai/gpt-more' },
        { id: 'second', model: 'openai/gpt-spare' },
      ],
      fallback: { model: 'openai/gpt-more' },
    };
    assert.match(
      await ok(['route-packs', 'add', file('pair.json', JSON.stringify(body))]),
      /^Added route pack pair \(ordered, 2 routes, fallback openai\/gpt-more\); call it as .*@route\/pair/,
    );
    const pack = (await svc.request('GET', '/v1/route-packs/pair')).json;
    assert.deepEqual(
      pack.routes.map((r: { id: string }) => r.id),
      ['first', 'second'],
    );
    assert.match(
      await ok(['route-packs']),
      /pair\s+Pair\s+ordered\s+openai\/gpt-more, openai\/gpt-spare\s+openai\/gpt-more\s+2/,
    );
    assert.deepEqual(JSON.parse(await ok(['route-packs', 'remove', 'pair', '--json'])), {
      slug: 'pair',
      deleted: true,
    });
    assert.equal((await svc.request('GET', '/v1/route-packs/pair')).status, 404);
    assert.match(await ok(['route-packs']), /^No route packs\. Add one/);
  });

  test('bad input: a pack whose model does not resolve is exit 1; a bad file 2', async () => {
    const body = { slug: 'bad', routes: [{ id: 'a', model: 'openai/none' }], fallback: { model: 'openai/gpt-more' } };
    await refusals([
      [['route-packs', 'add', file('bad-pack.json', JSON.stringify(body))], 1, /^switchyard route-packs: /],
      [['route-packs', 'add', file('tabs.yaml', 'slug: x\n\troutes: []\n')], 2, /tabs\.yaml is not valid YAML/],
      [['route-packs', 'remove', 'none'], 1, /^switchyard route-packs: /],
      [['route-packs', 'remove'], 2, /Usage: switchyard route-packs/],
      [['route-packs', 'list', '--all'], 2, /Unknown option --all\. Usage: switchyard route-packs /],
    ]);
  });
});

describe('gauge', () => {
  let copilotId: string;

  test('accounts add asks for the key on a terminal without echoing it', async () => {
    const r = await inPty(
      ['gauge', 'accounts', 'add', 'github-copilot', '--base-url', copilot.baseUrl, '--label', 'Work'],
      /API key for GitHub Copilot \(Work\): /,
      `${COPILOT_KEY}\r`,
    );
    assert.equal(r.status, 0, r.stdout);
    const id = /Connected (\S+) \(GitHub Copilot, Work\), its key stored in the vault\./.exec(r.stdout)?.[1];
    assert.ok(id, r.stdout);
    copilotId = id;
    const account = (await svc.request('GET', '/v1/gauge/accounts')).json.data.find((a: any) => a.id === id);
    assert.equal(account.credentialConfigured, true);
    assert.equal(account.authMode, 'api_key');
    assert.equal(account.label, 'Work');
  });

  test('accounts add reads the key from stdin; remove deletes the account', async () => {
    const made = JSON.parse(await ok(['gauge', 'accounts', 'add', 'openrouter', '--json'], `${ROUTER_KEY}\n`));
    assert.equal(made.providerId, 'openrouter');
    assert.equal(made.credentialConfigured, true);
    assert.match(await ok(['gauge', 'accounts', 'remove', made.id]), /^Removed Gauge account /);
    const ids = (await svc.request('GET', '/v1/gauge/accounts')).json.data.map((a: any) => a.id);
    assert.ok(!ids.includes(made.id));
  });

  test('while off, gauge says so and refresh is refused; on, refresh reads the account', async () => {
    const off = await ok(['gauge']);
    assert.match(off, /^Gauge is off: nothing is collected\. Turn it on with `switchyard gauge on`\./);
    assert.match(off, new RegExp(`${copilotId} \\(Work\\)\\s+github-copilot\\s+not yet read\\s+no reading yet`));
    await fails(['gauge', 'refresh', copilotId], 1, /^switchyard gauge: .*Gauge/);
    assert.match(await ok(['gauge', 'on']), /^Gauge is on/);
    assert.equal((await svc.request('GET', '/v1/settings')).json.gauge.enabled, true);
    assert.match(await ok(['gauge', 'refresh', copilotId]), new RegExp(`^${copilotId}: ok, 1 reading\\.$`, 'm'));
    const status = await ok(['gauge']);
    assert.match(status, /^ACCOUNT\s+PROVIDER\s+STATE\s+WINDOW\s+USED \/ LIMIT\s+USED %\s+RESETS$/m);
    assert.match(status, /github-copilot\s+ok\s+premium_interactions\S*( \(\w+\))?\s+120 \/ 300\s+40%\s+in 5 days/);
    const json = JSON.parse(await ok(['gauge', '--json']));
    assert.equal(json.enabled, true);
    assert.equal(json.readings.find((r: any) => r.accountId === copilotId).windows[0].used, 120);
  });

  test('sources enable and disable a built-in source', async () => {
    assert.match(await ok(['gauge', 'sources']), /claude-code\s+local logs\s+claude-code\s+.*\s+no$/m);
    assert.match(await ok(['gauge', 'sources', 'enable', 'claude-code']), /claude-code is enabled/);
    const source = (id: string) =>
      svc.request('GET', '/v1/gauge/sources').then((r) => r.json.data.find((s: any) => s.id === id));
    assert.equal((await source('claude-code')).enabled, true);
    assert.equal(JSON.parse(await ok(['gauge', 'sources', 'disable', 'claude-code', '--json'])).enabled, false);
    assert.equal((await source('claude-code')).enabled, false);
  });

  test('bad input: unknown provider or subcommand 2, no key 2, unknown source 1', async () => {
    await refusals([
      [['gauge', 'accounts', 'add', 'mistral'], 2, /Gauge cannot connect "mistral" with a key/],
      [['gauge', 'accounts', 'add', 'openai'], 2, /needs its admin key/],
      [['gauge', 'frobnicate'], 2, /Usage: switchyard gauge/],
      [['gauge', 'sources', 'enable'], 2, /Usage: switchyard gauge/],
      [['gauge', '--label', 'x'], 2, /--label and --base-url are for `gauge accounts add`/],
      [['gauge', 'sources', 'enable', 'nope'], 1, /^switchyard gauge: /],
      [['gauge', 'refresh', 'nope'], 1, /^switchyard gauge: /],
    ]);
    assert.equal((await svc.request('GET', '/v1/gauge/accounts')).json.data.filter((a: any) => !a.builtIn).length, 1);
  });
});

describe('budgets', () => {
  test('add from options and from YAML, list, remove', async () => {
    const out = await ok([
      'budgets',
      'add',
      '--name',
      'Monthly',
      '--limit-usd',
      '20',
      '--period',
      'month',
      '--providers',
      'openai',
      '--thresholds',
      '90,50',
    ]);
    const id = /^Added budget (bud_\w+) \(Monthly\): \$20\.00 a month, \$0\.0000 counted so far \(estimated\)\.$/m.exec(
      out,
    )?.[1];
    assert.ok(id, out);
    const budget = (await svc.request('GET', '/v1/gauge/budgets')).json.data.find((b: any) => b.id === id);
    assert.deepEqual(
      [budget.amount, budget.period, budget.basis, budget.thresholds, budget.scope.providerIds],
      [20, 'month', 'estimated', [50, 90], ['openai']],
    );
    const yaml = file('budget.yaml', 'name: Daily\namount: 2.5\nperiod: day\nbasis: provider_reported\n');
    const daily = JSON.parse(await ok(['budgets', 'add', yaml, '--json']));
    assert.equal(daily.basis, 'provider_reported');
    const listed = await ok(['budgets']);
    assert.match(listed, /^ID\s+NAME\s+PERIOD\s+SPENT \/ LIMIT\s+USED %\s+BASIS\s+STATE\s+PERIOD ENDS$/m);
    assert.match(
      listed,
      new RegExp(`${id}\\s+Monthly\\s+month\\s+\\$0\\.0000 / \\$20\\.00\\s+0%\\s+estimated\\s+ok\\s+in `),
    );
    assert.match(await ok(['budgets', 'remove', daily.id]), new RegExp(`Removed budget ${daily.id}`));
    assert.equal((await svc.request('GET', '/v1/gauge/budgets')).json.data.length, 1);
  });

  test('bad input: options checked before sending (2), the service refusing (1)', async () => {
    const typo = ['budgets', 'add', '--name', 'X', '--limit-usd', '5', '--period', 'day'];
    await refusals([
      [['budgets', 'add', '--name', 'X', '--period', 'month'], 2, /Missing --limit-usd/],
      [['budgets', 'add', '--name', 'X', '--limit-usd', 'ten', '--period', 'month'], 2, /--limit-usd takes a number/],
      [
        ['budgets', 'add', '--name', 'X', '--limit-usd', '5', '--period', 'year'],
        2,
        /--period is one of: day, week, month/,
      ],
      [['budgets', 'add', file('b.json', '{}'), '--name', 'X'], 2, /Give a file or options, not both/],
      [['budgets', 'add', join(files, 'none.yaml')], 2, /Cannot read/],
      [['budgets', '--name', 'X'], 2, /Those options are for `budgets add`/],
      [[...typo, '--providers', 'opnai'], 1, /^switchyard budgets: No provider `opnai`/],
      [['budgets', 'remove', 'bud_nothing'], 1, /^switchyard budgets: /],
    ]);
    assert.equal((await svc.request('GET', '/v1/gauge/budgets')).json.data.length, 1, 'nothing else was saved');
  });
});

describe('alerts', () => {
  test('add from options and from a file, list, remove', async () => {
    const out = await ok([
      'alerts',
      'add',
      '--name',
      'Copilot low',
      '--kind',
      'quota_low',
      '--provider',
      'github-copilot',
      '--threshold',
      '25',
    ]);
    const id = /^Added alert rule (\S+) \(Copilot low: quota_low, provider github-copilot\)\.$/m.exec(out)?.[1];
    assert.ok(id, out);
    const rule = (await svc.request('GET', '/v1/gauge/alert-rules')).json.data.find((r: any) => r.id === id);
    assert.deepEqual([rule.threshold, rule.target, rule.enabled], [25, { providerId: 'github-copilot' }, true]);
    const json = file('rule.json', JSON.stringify({ name: 'Any budget', kind: 'budget_threshold', enabled: false }));
    assert.match(await ok(['alerts', 'add', json]), /\(Any budget: budget_threshold, all\), disabled\./);
    const listed = await ok(['alerts']);
    assert.match(
      listed,
      new RegExp(`${id}\\s+Copilot low\\s+quota_low\\s+provider github-copilot\\s+25\\s+yes\\s+60 min`),
    );
    assert.match(await ok(['alerts', 'remove', id!]), new RegExp(`Removed alert rule ${id} and its 0 events\\.`));
    assert.equal((await svc.request('GET', '/v1/gauge/alert-rules')).json.data.length, 1);
  });

  test('bad input: an unknown kind 2, a threshold the kind does not take 1', async () => {
    await refusals([
      [['alerts', 'add', '--name', 'X', '--kind', 'quota_high'], 2, /--kind is one of: quota_low, /],
      [['alerts', 'add', '--kind', 'quota_low'], 2, /Missing --name/],
      [['alerts', 'add', '--name', 'X', '--kind', 'quota_exhausted', '--threshold', '5'], 1, /threshold/],
      [['alerts', 'remove', 'nope'], 1, /^switchyard alerts: /],
      [['alerts', 'remove'], 2, /Usage: switchyard alerts/],
    ]);
  });
});

describe('services', () => {
  test('add a llama-server, start it with a progress bar, stop it, remove it', async () => {
    const added = await ok(['services', 'add', 'llamacpp', '--model', 'tiny.gguf', '--id', 'local', '--no-start']);
    assert.match(added, /^Added service local \(llama-server for tiny\.gguf\) at http:\/\/127\.0\.0\.1:\d+: stopped\./);
    assert.match(added, /Start it with `switchyard services start local`/);
    assert.equal((await svc.request('GET', '/v1/services/local')).json.state, 'stopped');
    assert.match(await ok(['services']), /^local\s+llamacpp\s+stopped\s+tiny\.gguf/m);
    assert.match(await ok(['services', 'start', 'local']), /Starting local: done/);
    assert.equal((await svc.request('GET', '/v1/services/local')).json.state, 'running');
    assert.match(await ok(['services', 'stop', 'local']), /^Service local is stopped\.$/m);
    assert.equal((await svc.request('GET', '/v1/services/local')).json.state, 'stopped');
    assert.deepEqual(JSON.parse(await ok(['services', 'remove', 'local', '--json'])), { id: 'local', deleted: true });
    assert.equal((await svc.request('GET', '/v1/services/local')).status, 404);
  });

  test('bad input: another kind or no model 2; a model not in the library or the embedded runtime 1', async () => {
    await refusals([
      [['services', 'add', 'ollama', '--model', 'tiny.gguf'], 2, /Only llamacpp services can be added/],
      [['services', 'add', 'llamacpp'], 2, /needs --model/],
      [['services', 'add', 'llamacpp', '--model', 'tiny.gguf', '--port', '80'], 2, /--port must be/],
      [['services', 'add', 'llamacpp', '--model', 'none.gguf'], 1, /^switchyard services: /],
      [['services', 'start', 'embedded'], 1, /^switchyard services: /],
      [['services', 'stop', 'nope'], 1, /^switchyard services: /],
      [['services', 'restart', 'local'], 2, /Usage: switchyard services/],
      [['services', '--model', 'x'], 2, /Those options are for `services add`/],
    ]);
    assert.equal((await svc.request('GET', '/v1/services')).json.data.length, 1, 'only the embedded runtime');
  });
});
