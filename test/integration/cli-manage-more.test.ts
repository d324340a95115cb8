import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import * as openaiFake from '../fakes/openai.ts';
import { writeTinyModel } from '../helpers/gguf.ts';
import { serviceBin, shellEnv, startService, tempHome, type TestService } from '../helpers/service.ts';

// The set-up commands beyond providers, models and tokens (cli/dispatch-setup.ts), run as a person runs them:
// the executable in a separate process against one real service for the whole file, each command's effect
// checked through the API afterwards. Bodies come from JSON and YAML files; a Gauge account's key from stdin
// or a hidden prompt in a pseudo-terminal (util-linux script); no output holds a key.

const KEY = `sk-more-${process.pid}-0123456789abcdef`;
const FAKES = fileURLToPath(new URL('../fakes/llama-server/', import.meta.url));
let svc: TestService;
let fake: openaiFake.OpenAIFake;
let env: NodeJS.ProcessEnv;
let files: string;
const printed: string[] = [];

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the executable without blocking this process, which also serves the fakes it may reach. */
function cli(args: string[], input = ''): Promise<Run> {
  const child = spawn(process.execPath, [serviceBin(), ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdin.end(input);
  return new Promise((resolve) =>
    child.on('close', (status) => {
      printed.push(stdout, stderr);
      resolve({ status, stdout, stderr });
    }),
  );
}

async function ok(args: string[], input = ''): Promise<string> {
  const r = await cli(args, input);
  assert.equal(r.status, 0, `switchyard ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Runs `args` and expects exit `status` with stderr matching `message`. */
async function fails(args: string[], status: number, message: RegExp): Promise<Run> {
  const r = await cli(args);
  assert.equal(r.status, status, `switchyard ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  assert.match(r.stderr, message);
  return r;
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
    assert.ok(!text.includes(KEY), 'a command printed a key');
    assert.ok(!text.includes(svc.adminToken), 'a command printed the admin token');
  }
  await svc?.stop();
  await fake?.close();
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
    await fails(['presets', 'add', join(files, 'missing.yaml')], 2, /Cannot read .*missing\.yaml: ENOENT/);
    await fails(
      ['presets', 'add', file('bad.yaml', 'slug: [unclosed\nmodel: x\n')],
      2,
      /bad\.yaml is not valid YAML: .* at line \d+, column \d+\.$/m,
    );
    await fails(['presets', 'add', file('list.json', '[1, 2]')], 2, /must hold one object/);
    await fails(['presets', 'add', file('prose.txt', 'just some words')], 2, /must hold one object/);
    await fails(['presets', 'add', file('big.json', `{"slug": "${'x'.repeat(1_100_000)}"}`)], 2, /over 1 MB/);
    await fails(['presets', 'add', files], 2, /is not a file/);
    const wrong = file('wrong.yaml', 'slug: wrong\nmodel: openai/none\nfamilyScope: [styleA.chat_completions]\n');
    await fails(['presets', 'add', wrong], 1, /^switchyard presets: .*model/);
    await fails(['presets', 'remove', 'nothing-here'], 1, /^switchyard presets: /);
    await fails(['presets', 'frobnicate'], 2, /Usage: switchyard presets/);
    await fails(['presets', 'add'], 2, /Usage: switchyard presets/);
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
    await fails(['route-packs', 'add', file('bad-pack.json', JSON.stringify(body))], 1, /^switchyard route-packs: /);
    await fails(
      ['route-packs', 'add', file('tabs.yaml', 'slug: x\n\troutes: []\n')],
      2,
      /tabs\.yaml is not valid YAML/,
    );
    await fails(['route-packs', 'remove', 'none'], 1, /^switchyard route-packs: /);
    await fails(['route-packs', 'remove'], 2, /Usage: switchyard route-packs/);
    await fails(['route-packs', 'list', '--all'], 2, /Unknown option '--all'/);
  });
});
