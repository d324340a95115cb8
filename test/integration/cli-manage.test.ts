import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as openaiFake from '../fakes/openai.ts';
import { shellEnv, startService, tempHome, type TestService } from '../helpers/service.ts';
import { cliRunner } from '../helpers/cli-run.ts';

// The commands that change the set-up, run as a person runs them (the executable in a separate process, the
// service found from its instance file), each checked through the API afterwards. Keys come from stdin or a
// hidden prompt in a pseudo-terminal (util-linux script), never from argv; no output holds one.

const KEY = `sk-manage-${process.pid}-0123456789abcdef`;
const WRONG_KEY = `sk-wrong-${process.pid}-0123456789abcdef`;
let svc: TestService;
let fake: openaiFake.OpenAIFake;
let env: NodeJS.ProcessEnv;

const { cli, ok, inPty, printed } = cliRunner(() => env);

before(async () => {
  const home = tempHome();
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
