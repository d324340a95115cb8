import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { headroomWords } from '../../cli/provider-keys.ts';
import * as openaiFake from '../fakes/openai.ts';
import { cliRunner } from '../helpers/cli-run.ts';
import { addProvider } from '../helpers/gateway.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// `switchyard providers keys ...` run as a person runs it (the executable in a process of its own, the service,
// in this process, found from its instance file): each command's effect read back through the API. A key comes
// from stdin or a hidden prompt in a pseudo-terminal, never from argv; no output holds one.

const KEY = `sk-keys-${process.pid}-0123456789abcdef`;
const SPARE = `sk-keys-spare-${process.pid}-0123456789abcdef`;
let svc: InProcessService;
let oa: openaiFake.OpenAIFake;

const shell = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, SWITCHYARD_HOME: svc.home };
  delete env.SWITCHYARD_PORT;
  delete env.SWITCHYARD_TOKEN;
  return env;
};
const { cli, ok, inPty, printed } = cliRunner(shell);

before(async () => {
  oa = await openaiFake.start({ apiKey: KEY });
  oa.setModels([{ id: 'gpt-keys' }]);
  svc = await startInProcess();
  await addProvider(svc, { id: 'oa', kind: 'openai', baseUrl: oa.baseUrl, credential: KEY });
});
after(async () => {
  for (const text of printed) {
    assert.ok(!text.includes(KEY) && !text.includes(SPARE), 'a command printed a provider key');
    assert.ok(!/cred_[0-9A-Z]{26}/.test(text), 'a command printed a vault reference');
  }
  await svc?.stop();
  await oa?.close();
});

const keys = async () =>
  (await svc.request('GET', '/v1/providers/oa/credentials')).json.data as {
    id: string;
    label: string;
    weight: number;
    enabled: boolean;
  }[];

describe('providers keys', () => {
  test('add reads the key from stdin and stores it under its label and weight', async () => {
    const out = await ok(['providers', 'keys', 'add', 'oa', '--label', 'spare', '--weight', '4'], `${SPARE}\n`);
    assert.match(out, /^Added key key_[0-9A-HJKMNP-TV-Z]{26} \(spare\) to oa, stored in the vault\.$/m);
    const spare = (await keys()).find((k) => k.label === 'spare');
    assert.deepEqual([spare?.weight, spare?.enabled], [4, true]);
  });

  test('on a terminal the key is asked for and not echoed', async () => {
    const r = await inPty(
      ['providers', 'keys', 'add', 'oa', '--label', 'typed', '--disabled'],
      /API key for oa \(typed\): /,
      `${KEY}\r`,
    );
    assert.equal(r.status, 0, r.stdout);
    assert.match(r.stdout, /Added key key_\w+ \(typed\)/);
    const typed = (await keys()).find((k) => k.label === 'typed');
    assert.equal(typed?.enabled, false);
  });

  test('list shows each key without the key; --json is the API`s answer', async () => {
    const out = await ok(['providers', 'keys', 'list', 'oa']);
    const lines = out.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID\s+LABEL\s+WEIGHT\s+ENABLED\s+REFUSED\s+HEADROOM$/);
    assert.deepEqual(
      lines.slice(1).map((l) => l.split(/\s{3,}/).slice(1)),
      [
        ['default', '1', 'yes', 'no', '-'],
        ['spare', '4', 'yes', 'no', '-'],
        ['typed', '1', 'no', 'no', '-'],
      ],
    );
    const json = JSON.parse(await ok(['providers', 'keys', 'list', 'oa', '--json']));
    assert.deepEqual(json, (await svc.request('GET', '/v1/providers/oa/credentials')).json);
  });

  test('enable, disable and remove, each by the credential ID', async () => {
    const typed = (await keys()).find((k) => k.label === 'typed')!;
    assert.match(
      await ok(['providers', 'keys', 'enable', 'oa', typed.id]),
      /^Key key_\w+ \(typed\) of oa is enabled\.$/m,
    );
    assert.equal((await keys()).find((k) => k.id === typed.id)?.enabled, true);
    await ok(['providers', 'keys', 'disable', 'oa', typed.id]);
    assert.equal((await keys()).find((k) => k.id === typed.id)?.enabled, false);
    assert.match(await ok(['providers', 'keys', 'remove', 'oa', typed.id]), /^Removed key key_\w+ from oa;/m);
    assert.deepEqual(
      (await keys()).map((k) => k.label),
      ['default', 'spare'],
    );
  });

  test('mistakes: usage errors exit 2 before a key is asked for; refusals exit 1 with the reason', async () => {
    const cases: [string[], string, number, RegExp][] = [
      [['providers', 'keys', 'add', 'oa'], `${SPARE}\n`, 2, /--label is required/],
      [['providers', 'keys', 'add', 'oa', '--label', 'x', '--weight', '0'], `${SPARE}\n`, 2, /--weight must be/],
      [['providers', 'keys', 'add', 'oa', '--label', 'empty'], '', 2, /No key given/],
      [['providers', 'keys', 'list'], '', 2, /Usage: switchyard providers keys/],
      [['providers', 'keys', 'list', 'oa', '--label', 'x'], '', 2, /go with `keys add`/],
      [['providers', 'keys', 'remove', 'oa'], '', 2, /Usage/],
      [['providers', 'keys', 'wipe', 'oa', 'x'], '', 2, /Usage/],
      [
        ['providers', 'keys', 'add', 'oa', '--label', 'spare'],
        `${SPARE}\n`,
        1,
        /already has a credential labelled `spare`/,
      ],
      [['providers', 'keys', 'remove', 'oa', 'key_nope'], '', 1, /has no credential `key_nope`/],
      [['providers', 'keys', 'list', 'nope'], '', 1, /No provider with ID `nope`/],
    ];
    for (const [args, input, status, message] of cases) {
      const r = await cli(args, input);
      assert.equal(r.status, status, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
    }
    assert.deepEqual(
      (await keys()).map((k) => k.label),
      ['default', 'spare'],
    );
  });
});

test('headroom in words: cooling first, else requests and tokens left of their limits', () => {
  assert.equal(headroomWords({ headroom: null, coolingUntil: null }), '-');
  assert.equal(
    headroomWords({ headroom: null, coolingUntil: '2026-12-07T10:00:00.000Z' }),
    'cooling until 2026-12-07T10:00:00.000Z',
  );
  const figure = (remaining: number, limit: number) => ({ remaining, limit, resetsAt: null });
  assert.equal(
    headroomWords({ headroom: { requests: figure(5, 100), tokens: figure(2000, 90000) }, coolingUntil: null }),
    '5/100 requests, 2000/90000 tokens',
  );
  assert.equal(headroomWords({ headroom: { requests: null, tokens: figure(1, 2) }, coolingUntil: null }), '1/2 tokens');
});
