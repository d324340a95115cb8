import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_SETTINGS } from '../../protocol/http/settings.ts';
import { openStoreEnv } from '../../store/env.ts';
import { settingsRepo } from '../../store/settings-repo.ts';
import * as openaiFake from '../fakes/openai.ts';
import { tempHome, type Reply } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// W2.6 item 5: inputs that answered 500 and must be refused with a 4xx or served. The service starts on a
// data directory whose settings an older version wrote with a NUL byte in runtime.modelsDirectory, so every
// test here also runs "after restart" with that value stored.

const KEY = `fake-openai-key-${process.pid}`;
const STORED_BAD_DIR = '/srv/models\u0000old';
let svc: InProcessService;
let oa: openaiFake.OpenAIFake;

before(async () => {
  const home = tempHome();
  const env = openStoreEnv(home);
  const repo = settingsRepo(env);
  await env.commit(() =>
    repo.stage({
      ...structuredClone(DEFAULT_SETTINGS),
      runtime: { ...DEFAULT_SETTINGS.runtime, modelsDirectory: STORED_BAD_DIR },
    }),
  );
  await env.close();
  oa = await openaiFake.start({ apiKey: KEY });
  oa.setModels([{ id: 'gpt-test' }]);
  svc = await startInProcess({ home });
  assert.equal(
    (await svc.request('POST', '/v1/providers', { body: { kind: 'openai', baseUrl: oa.baseUrl, credential: KEY } }))
      .status,
    201,
  );
  assert.equal((await svc.request('POST', '/v1/providers/openai/actions/refresh-models')).status, 200);
  const preset = await svc.request('POST', '/v1/presets', {
    body: {
      slug: 'deep',
      model: 'openai/gpt-test',
      parameters: { temperature: 0.3 },
      familyScope: ['styleA.chat_completions'],
    },
  });
  assert.equal(preset.status, 201, preset.text);
});
after(async () => {
  await svc?.stop();
  await oa?.close();
});

function assertError(reply: Reply, status: number, code: string, param: string | null): void {
  assert.equal(reply.status, status, reply.text.slice(0, 300));
  assert.equal(reply.json.error.code, code);
  assert.equal(reply.json.error.param, param);
}

describe('regression W2.6: 5,000-level nested JSON through a preset', () => {
  /** `{"a":{"a":...{"a":0}...}}`, `depth` objects deep: JSON.stringify of it overflows the stack. */
  const deepText = (depth: number) => '{"a":'.repeat(depth) + '0' + '}'.repeat(depth);
  const body = (model: string) =>
    `{"model":"${model}","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema",` +
    `"json_schema":{"name":"d","schema":${deepText(5000)}}}}`;
  /** What the upstream received under `response_format`, as the text the client sent. */
  const relayedSchema = () => {
    const text = oa.requests.at(-1)!.body;
    const from = text.indexOf('"schema":') + '"schema":'.length;
    return text.slice(from, from + deepText(5000).length);
  };

  test('is served like the same body sent to the direct model, the deep member relayed byte for byte', async () => {
    const direct = await svc.request('POST', '/v1/chat/completions', {
      body: body('openai/gpt-test'),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(direct.status, 200, direct.text.slice(0, 300));
    assert.equal(relayedSchema(), deepText(5000));
    const viaPreset = await svc.request('POST', '/v1/chat/completions', {
      body: body('@preset/deep'),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(viaPreset.status, 200, viaPreset.text.slice(0, 300));
    assert.equal(relayedSchema(), deepText(5000));
    const relayed = JSON.parse(oa.requests.at(-1)!.body) as Record<string, unknown>;
    assert.equal(relayed.temperature, 0.3, 'the preset was applied');
    assert.equal(relayed.model, 'gpt-test');
  });
});

// Found while checking the above: a key written with an escape sends the proxy worker down its
// parse-and-stringify road (workers/proxy/upstream-body.ts), whose JSON.stringify overflows at this depth.
test(
  'regression W2.6: a direct call whose `model` key is escaped and whose body is nested 30,000 levels deep is ' +
    'served',
  async () => {
    const depth = 30_000;
    const text =
      `{"mod\\u0065l":"openai/gpt-test","messages":[{"role":"user","content":"hi"}],` +
      `"x":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`;
    const reply = await svc.request('POST', '/v1/chat/completions', {
      body: text,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(reply.status, 200, reply.text.slice(0, 300));
  },
);

describe('regression W2.6: control characters in runtime.modelsDirectory', () => {
  test('PATCH refuses NUL and other control characters with 400 naming the param, and stores nothing', async () => {
    for (const dir of ['/srv/a\u0000b', '/srv/a\nb', '/srv/\u001b[31m', '/srv/a\u007f']) {
      const reply = await svc.request('PATCH', '/v1/settings', { body: { runtime: { modelsDirectory: dir } } });
      assertError(reply, 400, 'INVALID_REQUEST', 'runtime.modelsDirectory');
    }
    assert.equal((await svc.request('GET', '/v1/settings')).json.runtime.modelsDirectory, STORED_BAD_DIR);
  });

  test(
    'a value stored by an older version leaves the runtime routes answering: an empty library with the ' + 'reason',
    async () => {
      const library = await svc.request('GET', '/v1/runtime/models');
      assert.equal(library.status, 200, library.text);
      assert.deepEqual(library.json.data, []);
      assert.match(library.json.problem, /runtime\.modelsDirectory.*control character/);
      assert.equal(library.text.includes('/srv/models'), false, 'the reason names no path');
      const loaded = await svc.request('GET', '/v1/runtime/loaded');
      assert.deepEqual([loaded.status, loaded.json.data], [200, []]);
      assert.equal(loaded.json.memory.heldBytes, 0);
    },
  );

  test('an embedded provider over that value reports the reason as 502, not 500', async () => {
    assert.equal((await svc.request('POST', '/v1/providers', { body: { id: 'local', kind: 'embedded' } })).status, 201);
    const refreshed = await svc.request('POST', '/v1/providers/local/actions/refresh-models');
    assertError(refreshed, 502, 'UPSTREAM_ERROR', null);
    assert.match(refreshed.json.error.message, /control character/);
  });

  test('a good value replaces it and the library reads again', async () => {
    mkdirSync(`${svc.home}/good-models`);
    const reply = await svc.request('PATCH', '/v1/settings', {
      body: { runtime: { modelsDirectory: `${svc.home}/good-models` } },
    });
    assert.equal(reply.status, 200, reply.text);
    const library = await svc.request('GET', '/v1/runtime/models');
    assert.deepEqual([library.status, library.json], [200, { data: [], problem: null }]);
  });
});

describe('regression W2.6: very long IDs', () => {
  const ids = { ascii: 'r'.repeat(9000), encoded: '%C3%A9'.repeat(3000), justOver: 'x'.repeat(513) };

  test('/v1/responses/{id} paths over 512 bytes are 400 naming `id`, on every method', async () => {
    for (const id of Object.values(ids)) {
      for (const [method, path] of [
        ['GET', `/v1/responses/${id}`],
        ['DELETE', `/v1/responses/${id}`],
        ['GET', `/v1/responses/${id}/input_items`],
        ['POST', `/v1/responses/${id}/cancel`],
      ]) {
        assertError(await svc.request(method!, path!), 400, 'INVALID_REQUEST', 'id');
      }
    }
    assertError(await svc.request('GET', `/v1/responses/${'x'.repeat(512)}`), 404, 'NOT_FOUND', 'id');
  });

  test('catalog model IDs longer than any the catalog can hold are 404 on every route; bodies are 400', async () => {
    for (const id of Object.values(ids)) {
      for (const [method, path, body] of [
        ['GET', `/v1/catalog/models/${id}`],
        ['PATCH', `/v1/catalog/models/${id}`, { hidden: true }],
        ['DELETE', `/v1/catalog/models/${id}`],
        ['POST', `/v1/catalog/models/${id}/actions/load`],
      ] as const) {
        assertError(await svc.request(method, path, body === undefined ? {} : { body }), 404, 'NOT_FOUND', 'id');
      }
    }
    const created = await svc.request('POST', '/v1/catalog/models', {
      body: { providerId: 'openai', upstreamModelId: 'u'.repeat(401) },
    });
    assertError(created, 400, 'INVALID_REQUEST', 'upstreamModelId');
    const draft = await svc.request('PATCH', '/v1/catalog/models/openai%2Fgpt-test', {
      body: { acceleration: { mode: 'draft', draftModelId: 'd'.repeat(513) } },
    });
    assertError(draft, 400, 'INVALID_REQUEST', 'acceleration');
  });
});
