import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as openaiFake from '../fakes/openai.ts';
import { shellEnv, startService, tempHome, type TestService } from '../helpers/service.ts';
import { cliRunner } from '../helpers/cli-run.ts';

// The commands that change the set-up, run as a person runs them (the executable in a separate process, the
// service found from its instance file), each checked through the API afterwards. Keys come from stdin or a
// hidden prompt in a pseudo-terminal (util-linux script), never from argv; no output holds one. Enforced limits
// (cli/limits.ts) are here too: cli-manage-more.test.ts is full.

const KEY = `sk-manage-${process.pid}-0123456789abcdef`;
const WRONG_KEY = `sk-wrong-${process.pid}-0123456789abcdef`;
let svc: TestService;
let fake: openaiFake.OpenAIFake;
let env: NodeJS.ProcessEnv;
let home: string;

const { cli, ok, inPty, printed } = cliRunner(() => env);

before(async () => {
  home = tempHome();
  fake = await openaiFake.start({ apiKey: KEY });
  fake.setModels([{ id: 'gpt-manage' }, { id: 'gpt-other' }]);
  svc = await startService({ home });
  env = shellEnv(home);
});

after(async () => {
  // No command printed a provider key or the admin token, whatever it did.
  for (const text of printed) {
    assert.ok(!text.includes(KEY), 'a command printed the provider key');
    assert.ok(!text.includes(svc.adminToken), 'a command printed the admin token');
  }
  await svc?.stop();
  await fake?.close();
});

describe('providers', () => {
  test('add reads the key from stdin, stores it, and the provider lists its models', async () => {
    const out = await ok(
      ['providers', 'add', 'openai', '--id', 'piped', '--base-url', fake.baseUrl, '--name', 'Piped'],
      `${KEY}\n`,
    );
    assert.match(out, /^Added provider piped \(openai, http:\/\/127\.0\.0\.1:\d+\/v1\), its key stored in the vault\./);
    const provider = (await svc.request('GET', '/v1/providers/piped')).json;
    assert.equal(provider.credentialConfigured, true);
    assert.equal(provider.displayName, 'Piped');
    // The stored key is the one piped in, without its newline: the fake accepts only that.
    assert.match(await ok(['providers', 'test', 'piped']), /^piped: reachable, 2 models listed in \d+ ms\.$/m);
  });

  test('on a terminal the key is asked for and not echoed', async () => {
    const r = await inPty(
      ['providers', 'add', 'openai', '--id', 'typed', '--base-url', fake.baseUrl],
      /API key for typed: /,
      `${KEY}\r`,
    );
    assert.equal(r.status, 0, r.stdout);
    assert.match(r.stdout, /API key for typed: /);
    assert.match(r.stdout, /Added provider typed/);
    assert.equal((await svc.request('GET', '/v1/providers/typed')).json.credentialConfigured, true);
    assert.match(await ok(['providers', 'test', 'typed']), /reachable/);
  });

  test('a hosted kind without a key is a usage error and adds nothing', async () => {
    const r = await cli(['providers', 'add', 'openai', '--id', 'keyless', '--base-url', fake.baseUrl]);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /needs an API key/);
    assert.equal((await svc.request('GET', '/v1/providers/keyless')).status, 404);
  });

  test('test says what failed, without the key, and exits 1', async () => {
    await ok(['providers', 'add', 'openai', '--id', 'wrong-key', '--base-url', fake.baseUrl], `${WRONG_KEY}\n`);
    const r = await cli(['providers', 'test', 'wrong-key']);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /^wrong-key: failed \(UPSTREAM_AUTH_FAILED\): /);
    assert.ok(!r.stderr.includes(WRONG_KEY.slice(0, -4)));
    const json = JSON.parse((await cli(['providers', 'test', 'wrong-key', '--json'])).stdout);
    assert.equal(json.ok, false);
  });

  test('disable and enable change the record; remove deletes it', async () => {
    assert.match(await ok(['providers', 'disable', 'wrong-key']), /wrong-key is disabled/);
    assert.equal((await svc.request('GET', '/v1/providers/wrong-key')).json.enabled, false);
    assert.equal(JSON.parse(await ok(['providers', 'enable', 'wrong-key', '--json'])).enabled, true);
    assert.match(await ok(['providers', 'remove', 'wrong-key']), /Removed provider wrong-key/);
    assert.equal((await svc.request('GET', '/v1/providers/wrong-key')).status, 404);
  });

  test('bad input: an unknown kind exits 2, an unknown provider 1 with the reason', async () => {
    const kind = await cli(['providers', 'add', 'nope']);
    assert.equal(kind.status, 2);
    assert.match(kind.stderr, /Unknown kind "nope"/);
    const missing = await cli(['providers', 'remove', 'missing']);
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /switchyard providers: /);
    assert.equal((await cli(['providers', 'frobnicate', 'x'])).status, 2);
    assert.equal((await cli(['providers', 'add'])).status, 2);
    // A bad base URL is the service's refusal, passed on.
    const url = await cli(['providers', 'add', 'openai_compatible', '--id', 'badurl', '--base-url', 'ftp://x'], '');
    assert.equal(url.status, 1);
    assert.match(url.stderr, /baseUrl/);
  });
});

describe('models', () => {
  test('alias names a model; hide takes it out of discovery and show brings it back', async () => {
    const refreshed = await svc.request('POST', '/v1/providers/piped/actions/refresh-models');
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.match(
      await ok(['models', 'alias', 'manage-fast', 'piped/gpt-manage']),
      /manage-fast now names piped\/gpt-manage/,
    );
    assert.deepEqual((await svc.request('GET', '/v1/catalog/models/piped%2Fgpt-manage')).json.aliases, ['manage-fast']);
    // Aliasing again changes nothing.
    assert.deepEqual(JSON.parse(await ok(['models', 'alias', 'manage-fast', 'piped/gpt-manage', '--json'])).aliases, [
      'manage-fast',
    ]);
    await ok(['models', 'hide', 'piped/gpt-other']);
    const listed = (await svc.request('GET', '/v1/models')).json.data.map((m: { id: string }) => m.id);
    assert.ok(!listed.includes('piped/gpt-other'));
    assert.ok(listed.includes('piped/gpt-manage'));
    await ok(['models', 'show', 'piped/gpt-other']);
    assert.ok(
      (await svc.request('GET', '/v1/models')).json.data.some((m: { id: string }) => m.id === 'piped/gpt-other'),
    );
  });

  test('bad input: a missing model exits 1; a missing argument 2', async () => {
    assert.equal((await cli(['models', 'hide', 'piped/none'])).status, 1);
    assert.equal((await cli(['models', 'alias', 'only-one'])).status, 2);
    assert.equal((await cli(['models', 'hide'])).status, 2);
  });
});

describe('tokens', () => {
  test('create prints the secret once; it works until revoked', async () => {
    const r = await cli(['tokens', 'create', 'my-agent', '--scopes', 'inference,read']);
    assert.equal(r.status, 0, r.stderr);
    const secret = r.stdout.trim();
    assert.match(secret, /^sk-svc-[A-Za-z0-9_-]{43}$/);
    assert.match(r.stderr, /Created tok_\w+ \(my-agent: inference, read\)/);
    const headers = { authorization: `Bearer ${secret}` };
    assert.equal((await svc.request('GET', '/v1/models', { token: null, headers })).status, 200);
    const list = await ok(['tokens']);
    const row = list.split('\n').find((l) => l.includes('my-agent'));
    assert.ok(row && !row.includes(secret), list);
    const id = JSON.parse(await ok(['tokens', 'list', '--json'])).data.find(
      (t: { name: string }) => t.name === 'my-agent',
    ).id;
    assert.match(await ok(['tokens', 'revoke', id]), new RegExp(`Revoked ${id}`));
    assert.equal((await svc.request('GET', '/v1/models', { token: null, headers })).status, 401);
  });

  test('bad input: unknown scopes and a long name exit 2 and create nothing', async () => {
    const before = (await svc.request('GET', '/v1/tokens')).json.data.length;
    assert.equal((await cli(['tokens', 'create', 'x', '--scopes', 'root'])).status, 2);
    assert.equal((await cli(['tokens', 'create', 'x'.repeat(101)])).status, 2);
    assert.equal((await cli(['tokens', 'create'])).status, 2);
    const expired = await cli(['tokens', 'create', 'old', '--expires', '2000-01-01T00:00:00Z']);
    assert.equal(expired.status, 1);
    assert.equal((await svc.request('GET', '/v1/tokens')).json.data.length, before);
  });
});

describe('limits', () => {
  const limits = async () => (await svc.request('GET', '/v1/limits')).json.data;
  const byName = async (name: string) => (await limits()).find((l: { name: string }) => l.name === name);
  let serviceId: string;

  /** `switchyard limits add --name <name> ...rest`: the new limit's ID from the line it prints. */
  async function add(name: string, rest: string[]): Promise<{ id: string; out: string }> {
    const out = await ok(['limits', 'add', '--name', name, ...rest]);
    const id = new RegExp(`^Added limit (lim_\\S+) \\(${name}\\): `).exec(out)?.[1];
    assert.ok(id, out);
    return { id, out };
  }

  test('add each scope kind that needs no upstream, from options and from YAML; list as text and JSON', async () => {
    const added = await add('Whole service', ['--scope', 'service', '--window', 'day', '--max', '$5', '--usd']);
    serviceId = added.id;
    assert.match(added.out, /: at most \$5\.00 a day for service; \$0\.0000 used, resets in \d+ \w+\.$/m);
    const created = await svc.request('POST', '/v1/tokens', { body: { name: 'limited', scopes: ['inference'] } });
    svc.markSecretBearing(created);
    const tokenId = created.json.token.id;
    const byToken = await add('Agent', [
      '--token-name',
      'limited',
      '--window',
      'hour',
      '--max',
      '100k',
      '--tokens',
      'total',
    ]);
    assert.match(byToken.out, new RegExp(`at most 100,000 total tokens an hour for token ${tokenId}; 0 used`));
    await add('Agent output', [
      '--scope',
      `token:${tokenId}`,
      '--window',
      'minute',
      '--max',
      '2,000',
      '--tokens',
      'output',
    ]);
    await add('Sessions', ['--scope', 'session', '--window', 'week', '--max', '60', '--requests']);
    const one = await add('One session', [
      '--scope',
      'session:run:7',
      '--window',
      'month',
      '--max',
      '1.5',
      '--usd',
      '--disabled',
    ]);
    assert.match(one.out, /for session run:7, disabled\.$/m);
    const yaml = join(home, 'limit.yaml');
    writeFileSync(yaml, 'name: Monthly\nscope: {kind: service}\nwindow: month\nmetric: input_tokens\nmax: 1000000\n');
    assert.equal(JSON.parse(await ok(['limits', 'add', yaml, '--json'])).metric, 'input_tokens');

    const shape = (l: any) => [l.scope, l.window, l.metric, l.max, l.enabled];
    assert.deepEqual(shape(await byName('Whole service')), [{ kind: 'service', id: null }, 'day', 'usd', 5, true]);
    assert.deepEqual(shape(await byName('Agent')), [
      { kind: 'token', id: tokenId },
      'hour',
      'total_tokens',
      100_000,
      true,
    ]);
    assert.deepEqual(shape(await byName('Agent output')), [
      { kind: 'token', id: tokenId },
      'minute',
      'output_tokens',
      2000,
      true,
    ]);
    assert.deepEqual(shape(await byName('Sessions')), [{ kind: 'session', id: null }, 'week', 'requests', 60, true]);
    assert.deepEqual(shape(await byName('One session')), [
      { kind: 'session', id: 'run:7' },
      'month',
      'usd',
      1.5,
      false,
    ]);
    assert.deepEqual(shape(await byName('Monthly')), [
      { kind: 'service', id: null },
      'month',
      'input_tokens',
      1e6,
      true,
    ]);

    // A call in a session, through a provider on the fake: the per-session limit lists its counter.
    await svc.request('POST', '/v1/providers', {
      body: { kind: 'openai', id: 'lim', baseUrl: fake.baseUrl, credential: KEY },
    });
    assert.equal((await svc.request('POST', '/v1/providers/lim/actions/refresh-models')).status, 200);
    const call = await svc.request('POST', '/v1/chat/completions', {
      headers: { 'x-session-id': 'agent-run-1' },
      body: { model: 'lim/gpt-manage', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(call.status, 200, call.text);

    const listed = await ok(['limits']);
    assert.match(listed, /^ID\s+NAME\s+SCOPE\s+WINDOW\s+METRIC\s+USED \/ MAX\s+USED %\s+RESERVED\s+RESETS\s+ENABLED$/m);
    assert.match(
      listed,
      new RegExp(
        `${serviceId}\\s+Whole service\\s+service\\s+day\\s+dollars\\s+` +
          '\\$0\\.\\d{4} / \\$5\\.00\\s+\\d+%\\s+\\$0\\.0000\\s+in \\d+ \\w+\\s+yes',
      ),
    );
    assert.match(
      listed,
      new RegExp(`Agent\\s+token ${tokenId}\\s+hour\\s+total tokens\\s+0 / 100,000\\s+0%\\s+0\\s+in \\d+ \\w+\\s+yes`),
    );
    assert.match(
      listed,
      new RegExp(
        'Sessions\\s+each session\\s+week\\s+requests\\s+- / 60\\s+-\\s+-\\s+in \\d+ \\w+\\s+yes\n' +
          '    session agent-run-1: 1 / 60 \\(2%\\), 0 reserved\n',
      ),
    );
    assert.match(
      listed,
      /One session\s+session run:7\s+month\s+dollars\s+\$0\.0000 \/ \$1\.50\s+0%\s+\$0\.0000\s+-\s+no\n/,
    );
    assert.match(listed, /Monthly\s+service\s+month\s+input tokens\s+\d+ \/ 1,000,000\s+0%\s+0\s+in \d+ \w+\s+yes/);
    const json = JSON.parse(await ok(['limits', 'list', '--json']));
    assert.deepEqual(
      json.data.map((l: any) => l.name),
      ['Whole service', 'Agent', 'Agent output', 'Sessions', 'One session', 'Monthly'],
    );
    const [counter] = json.data.find((l: any) => l.name === 'Agent').counters;
    assert.deepEqual([counter.key, counter.used, counter.reserved], [tokenId, 0, 0]);
    assert.ok(Date.parse(counter.resetsAt) > Date.now() && Date.parse(counter.resetsAt) <= Date.now() + 3_600_000);
  });

  test('set changes max, name and enabled; remove deletes the limit', async () => {
    assert.match(
      await ok(['limits', 'set', serviceId, '--max', '7.5']),
      new RegExp(`^Limit ${serviceId} \\(Whole service\\): at most \\$7\\.50 a day for service, enabled\\.$`, 'm'),
    );
    assert.equal((await byName('Whole service')).max, 7.5);
    assert.match(await ok(['limits', 'set', serviceId, '--disable']), /, disabled\.$/m);
    assert.equal((await byName('Whole service')).enabled, false);
    const changed = JSON.parse(await ok(['limits', 'set', serviceId, '--name', 'Daily dollars', '--enable', '--json']));
    assert.deepEqual([changed.name, changed.enabled, changed.max], ['Daily dollars', true, 7.5]);
    assert.equal((await svc.request('GET', `/v1/limits/${serviceId}`)).json.name, 'Daily dollars');
    assert.match(
      await ok(['limits', 'remove', serviceId]),
      new RegExp(`^Removed limit ${serviceId} and its counters\\.$`, 'm'),
    );
    assert.equal((await svc.request('GET', `/v1/limits/${serviceId}`)).status, 404);
  });

  test('bad input: options checked before sending (2), the service refusing (1) in its words', async () => {
    const before = (await limits()).length;
    const base = ['limits', 'add', '--name', 'X', '--window', 'day', '--max', '5'];
    const cases: [string[], number, RegExp][] = [
      [[...base, '--scope', 'service'], 2, /Say what the limit counts with one of --usd, --requests, --tokens/],
      [[...base, '--scope', 'service', '--usd', '--requests'], 2, /Say what the limit counts/],
      [[...base, '--scope', 'planet', '--usd'], 2, /--scope is one of: token:<id>, service-account:<id>, /],
      [[...base, '--scope', 'token', '--usd'], 2, /--scope token needs an ID: token:<id>\./],
      [[...base, '--scope', 'service:x', '--usd'], 2, /takes no ID/],
      [[...base, '--scope', 'service', '--tokens', 'cached'], 2, /--tokens is one of: total, input, output\./],
      [
        ['limits', 'add', '--name', 'X', '--scope', 'service', '--window', 'year', '--max', '5', '--usd'],
        2,
        /--window is one of: minute, hour, day, week, month, gauge\./,
      ],
      [
        ['limits', 'add', '--name', 'X', '--scope', 'service', '--window', 'day', '--max', 'lots', '--usd'],
        2,
        /--max takes a number/,
      ],
      [
        ['limits', 'add', '--name', 'X', '--window', 'day', '--usd'],
        2,
        /Missing --scope, --max\. Usage: switchyard limits/,
      ],
      [['limits', '--max', '5'], 2, /--max is for `limits add` and `limits set`/],
      [['limits', 'remove', 'x', '--enable'], 2, /--enable is for `limits set`/],
      [['limits', 'set', 'lim_x'], 2, /Say what to change/],
      [['limits', 'set', 'lim_x', '--enable', '--disable'], 2, /--enable or --disable, not both/],
      [['limits', 'list', '--all'], 2, /Unknown option --all\. Usage: switchyard limits /],
      [['limits', 'frobnicate'], 2, /Usage: switchyard limits/],
      [[...base, '--scope', 'token:tok_nothing', '--usd'], 1, /^switchyard limits: No token `tok_nothing`\.$/m],
      [
        [...base.slice(0, -1), '1.5', '--scope', 'service', '--tokens', 'total'],
        1,
        /^switchyard limits: A total_tokens limit is a whole number\.$/m,
      ],
      [[...base, '--token-name', 'nobody', '--usd'], 1, /^switchyard limits: No token is named "nobody"\.$/m],
      [['limits', 'set', 'lim_nothing', '--max', '5'], 1, /^switchyard limits: /],
      [['limits', 'remove', 'lim_nothing'], 1, /^switchyard limits: /],
      [['limits', 'add', '--name', 'G', '--scope', 'session', '--gauge', 'x', '--max', '90'], 2, /ACCOUNT:WINDOW/],
      [[...base, '--scope', 'service', '--requests', '--all-calls'], 2, /--all-calls goes with --gauge/],
      [
        ['limits', 'add', '--name', 'G', '--scope', 'session', '--gauge', 'nope:5h', '--max', '90'],
        1,
        /^switchyard limits: No Gauge account `nope`/m,
      ],
      [['limits', 'brake', '--repeats', 'many'], 2, /--repeats takes a whole number/],
      [['limits', 'brake', '--on', '--off'], 2, /--on or --off, not both/],
      [['limits', 'resume', 'nobody'], 1, /^switchyard limits: No paused session `nobody`\.$/m],
    ];
    // Three at a time: they change nothing, so order does not matter.
    const worker = async () => {
      for (let c = cases.shift(); c !== undefined; c = cases.shift()) {
        const r = await cli(c[0]);
        assert.equal(r.status, c[1], `switchyard ${c[0].join(' ')}: ${r.stdout}${r.stderr}`);
        assert.match(r.stderr, c[2], c[0].join(' '));
      }
    };
    await Promise.all([worker(), worker(), worker()]);
    assert.equal((await limits()).length, before, 'nothing else was saved');
  });

  test('brake shows and turns the loop brake; paused lists the paused sessions', async () => {
    assert.match(await ok(['limits', 'brake']), /^Loop brake off: .* 5 times in 120 s/m);
    assert.match(
      await ok(['limits', 'brake', '--on', '--repeats', '3', '--seconds', '60']),
      /^Loop brake on: .* 3 times/m,
    );
    assert.deepEqual((await svc.request('GET', '/v1/limits/loop-brake')).json, {
      enabled: true,
      repeats: 3,
      windowSeconds: 60,
    });
    assert.match(await ok(['limits', 'paused']), /No session is paused\./);
    assert.deepEqual(JSON.parse(await ok(['limits', 'paused', '--json'])), { data: [] });
    assert.match(await ok(['limits', 'brake', '--off']), /^Loop brake off/m);
  });
});
