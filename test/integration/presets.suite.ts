import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Presets end to end: write-time validation, the merge order of docs/api.md (preset defaults
// first, request fields last) as the fake upstreams received it, and discovery.

const OA_KEY = `fake-openai-key-${process.pid}`;
const AN_KEY = `fake-anthropic-key-${process.pid}`;
let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let an: anthropicFake.AnthropicFake;

const lastJson = (fake: { requests: { json: unknown }[] }) => fake.requests.at(-1)!.json as Record<string, unknown>;

before(async () => {
  oa = await openaiFake.start({ apiKey: OA_KEY });
  oa.setModels([{ id: 'gpt-test' }, { id: 'text-embedding-test' }]);
  an = await anthropicFake.start({ apiKey: AN_KEY });
  an.setModels([{ id: 'claude-test', displayName: 'Claude Test', createdAt: '2026-01-01T00:00:00Z' }]);
  svc = await startInProcess();
  for (const [kind, fake, key] of [
    ['openai', oa, OA_KEY],
    ['anthropic', an, AN_KEY],
  ] as const) {
    assert.equal(
      (await svc.request('POST', '/v1/providers', { body: { kind, baseUrl: fake.baseUrl, credential: key } })).status,
      201,
    );
    assert.equal((await svc.request('POST', `/v1/providers/${kind}/actions/refresh-models`)).status, 200);
  }
  const created = await svc.request('POST', '/v1/presets', {
    body: {
      slug: 'brief',
      displayName: 'Brief GPT',
      model: 'openai/gpt-test',
      parameters: { temperature: 0.2, max_tokens: 50, top_p: 0.5 },
      system: 'Be brief.',
      familyScope: ['styleA.chat_completions', 'styleA.responses'],
    },
  });
  assert.equal(created.status, 201, created.text);
  const claude = await svc.request('POST', '/v1/presets', {
    body: {
      slug: 'claude-brief',
      model: 'anthropic/claude-test',
      parameters: { max_tokens: 64, top_k: 5 },
      system: 'Preset system.',
      familyScope: ['styleB.messages'],
    },
  });
  assert.equal(claude.status, 201, claude.text);
});
after(async () => {
  await svc.stop();
  await oa.close();
  await an.close();
});

describe('preset writes', () => {
  const invalid = async (body: Record<string, unknown>, param: string) => {
    for (const path of ['/v1/presets', '/v1/presets/validate']) {
      const reply = await svc.request('POST', path, { body });
      assert.equal(reply.status, 400, `${path}: ${reply.text}`);
      assert.equal(reply.json.error.code, 'INVALID_REQUEST');
      assert.equal(reply.json.error.param, param);
    }
  };
  const base = { slug: 'x', model: 'openai/gpt-test', familyScope: ['styleA.chat_completions'] };

  test('a parameter the scope does not list is refused, naming it', async () => {
    await invalid({ ...base, parameters: { top_k: 3 } }, 'parameters.top_k');
    await invalid({ ...base, parameters: { messages: [] } }, 'parameters.messages');
    assert.equal((await svc.request('GET', '/v1/presets/x')).status, 404, 'nothing was saved');
  });

  test('familyScope must sit in one group and within the target; system only for generation', async () => {
    await invalid({ ...base, familyScope: ['styleA.chat_completions', 'styleA.embeddings'] }, 'familyScope');
    await invalid({ ...base, familyScope: ['styleB.messages'] }, 'familyScope[0]');
    await invalid(
      { ...base, model: 'openai/text-embedding-test', familyScope: ['styleA.embeddings'], system: 'hi' },
      'system',
    );
    await invalid({ ...base, model: 'openai/nope' }, 'model');
  });

  test('validate answers valid for a good body and saves nothing; writes are audited', async () => {
    const ok = await svc.request('POST', '/v1/presets/validate', { body: { ...base, parameters: { seed: 1 } } });
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.json, { valid: true });
    const patched = await svc.request('PATCH', '/v1/presets/brief', { body: { displayName: 'Brief GPT' } });
    assert.equal(patched.status, 200, patched.text);
    const audit = await svc.request('GET', '/v1/audit-events?resourceType=preset');
    assert.deepEqual((audit.json.data as { action: string }[]).map((e) => e.action).sort(), [
      'preset.create',
      'preset.create',
      'preset.update',
    ]);
    const dup = await svc.request('POST', '/v1/presets', { body: { ...base, slug: 'brief' } });
    assert.equal(dup.status, 409);
  });
});

describe('merge order (request fields override preset defaults)', () => {
  test('styleA chat: defaults fill gaps, request values win, the system message is prepended', async () => {
    const reply = await svc.request('POST', '/v1/chat/completions', {
      body: { model: '@preset/brief', temperature: 0.9, messages: [{ role: 'user', content: 'hello' }] },
    });
    assert.equal(reply.status, 200, reply.text);
    const sent = lastJson(oa);
    assert.equal(sent.model, 'gpt-test');
    assert.equal(sent.temperature, 0.9);
    assert.equal(sent.max_tokens, 50);
    assert.equal(sent.top_p, 0.5);
    assert.deepEqual(sent.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hello' },
    ]);
  });

  test('styleA chat: a request with its own developer message keeps it alone', async () => {
    const messages = [
      { role: 'developer', content: 'Mine.' },
      { role: 'user', content: 'hello' },
    ];
    assert.equal(
      (await svc.request('POST', '/v1/chat/completions', { body: { model: '@preset/brief', messages } })).status,
      200,
    );
    assert.deepEqual(lastJson(oa).messages, messages);
  });

  test('styleA responses: instructions come from the preset unless set; chat-only names stay out', async () => {
    assert.equal(
      (await svc.request('POST', '/v1/responses', { body: { model: '@preset/brief', input: 'hi' } })).status,
      200,
    );
    assert.equal(lastJson(oa).instructions, 'Be brief.');
    assert.equal(lastJson(oa).max_tokens, undefined, 'max_tokens is not a responses parameter');
    assert.equal(lastJson(oa).temperature, 0.2);
    assert.equal(
      (
        await svc.request('POST', '/v1/responses', {
          body: { model: '@preset/brief', input: 'hi', instructions: 'Own.' },
        })
      ).status,
      200,
    );
    assert.equal(lastJson(oa).instructions, 'Own.');
  });

  test('styleB messages: system and max_tokens from the preset unless the request sets them', async () => {
    const messages = [{ role: 'user', content: 'hello' }];
    const first = await svc.request('POST', '/v1/messages', {
      body: { model: '@preset/claude-brief', messages },
      headers: { 'anthropic-version': '2023-06-01' },
    });
    assert.equal(first.status, 200, first.text);
    assert.equal(lastJson(an).system, 'Preset system.');
    assert.equal(lastJson(an).max_tokens, 64);
    assert.equal(lastJson(an).top_k, 5);
    assert.equal(lastJson(an).model, 'claude-test');
    const second = await svc.request('POST', '/v1/messages', {
      body: { model: '@preset/claude-brief', messages, system: 'Request system.', max_tokens: 10 },
      headers: { 'anthropic-version': '2023-06-01' },
    });
    assert.equal(second.status, 200, second.text);
    assert.equal(lastJson(an).system, 'Request system.');
    assert.equal(lastJson(an).max_tokens, 10);
  });

  test('a family outside the scope fails locally, before any upstream call', async () => {
    const before = an.requests.length;
    const reply = await svc.request('POST', '/v1/chat/completions', {
      body: { model: '@preset/claude-brief', messages: [] },
    });
    assert.equal(reply.json.error.code, 'MODEL_ENDPOINT_NOT_SUPPORTED');
    assert.match(reply.json.error.message, /does not support OpenAI-style chat completions\.$/);
    assert.equal(an.requests.length, before);
  });
});

describe('discovery', () => {
  const listed = async (headers: Record<string, string>) => {
    // `limit` exists only in the styleB shape.
    const reply = await svc.request('GET', 'anthropic-version' in headers ? '/v1/models?limit=1000' : '/v1/models', {
      headers,
    });
    assert.equal(reply.status, 200, reply.text);
    return reply.json.data as {
      id: string;
      display_name?: string;
      families?: string[];
      switchyard?: Record<string, unknown>;
    }[];
  };

  test('presets are listed in both shapes with their display name and families within scope', async () => {
    for (const headers of [{}, { 'anthropic-version': '2023-06-01' }] as Record<string, string>[]) {
      const entry = (await listed(headers)).find((m) => m.id === '@preset/brief');
      assert.ok(entry, JSON.stringify(headers));
      assert.equal(entry.display_name, 'Brief GPT');
      assert.deepEqual(entry.families, ['styleA.chat_completions', 'styleA.responses']);
      assert.deepEqual(entry.switchyard, { kind: 'preset', model: 'openai/gpt-test' });
      const one = await svc.request('GET', '/v1/models/%40preset%2Fbrief', { headers });
      assert.equal(one.status, 200, one.text);
      assert.deepEqual(one.json, entry);
    }
    const client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken });
    assert.equal((await client.models.retrieve('@preset/brief')).owned_by, 'switchyard');
    const unknown = await svc.request('GET', '/v1/models/%40preset%2Fno-such-preset');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error.code, 'MODEL_NOT_FOUND');
  });

  test('a preset whose target is hidden is omitted and does not resolve', async () => {
    assert.equal(
      (await svc.request('PATCH', '/v1/catalog/models/anthropic%2Fclaude-test', { body: { hidden: true } })).status,
      200,
    );
    try {
      for (const headers of [{}, { 'anthropic-version': '2023-06-01' }] as Record<string, string>[]) {
        assert.ok(!(await listed(headers)).some((m) => m.id === '@preset/claude-brief'));
        assert.equal((await svc.request('GET', '/v1/models/%40preset%2Fclaude-brief', { headers })).status, 404);
      }
      const reply = await svc.request('POST', '/v1/messages', {
        body: { model: '@preset/claude-brief', messages: [] },
        headers: { 'anthropic-version': '2023-06-01' },
      });
      assert.equal(reply.status, 404);
      assert.equal(reply.json.error.code, 'MODEL_NOT_FOUND');
    } finally {
      await svc.request('PATCH', '/v1/catalog/models/anthropic%2Fclaude-test', { body: { hidden: false } });
    }
  });
});
