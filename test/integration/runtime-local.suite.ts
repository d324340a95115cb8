import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { writeTinyModel } from '../helpers/gguf.ts';
import { tempHome } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// A fresh service whose models directory already holds GGUF files: it serves them with no setup (the
// `embedded` provider is created at start), loads and unloads them on request, answers styleB messages, and
// drafts with another model when a catalog record asks for it.

let svc: InProcessService;
let openai: OpenAI;

before(async () => {
  const home = tempHome();
  const models = join(home, 'models');
  mkdirSync(models, { recursive: true });
  // Peaked output logits, so the draft is confident enough to draft; the same weights under another name
  // make a draft that always agrees with the target, so drafts get accepted.
  writeTinyModel(join(models, 'tiny.gguf'), { outputScale: 40 });
  writeTinyModel(join(models, 'draft.gguf'), { outputScale: 40 });
  writeTinyModel(join(models, 'other.gguf'), { seed: 5 });
  svc = await startInProcess({ home });
  openai = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
  const patched = await svc.request('PATCH', '/v1/settings', {
    body: { runtime: { tuning: { contextSize: 512, threads: 1, parallel: 2 } } },
  });
  assert.equal(patched.status, 200, patched.text);
});
after(async () => {
  await svc?.stop();
});

const greedy = async (model: string) => {
  const c = await openai.chat.completions.create({
    model,
    temperature: 0,
    max_tokens: 24,
    messages: [{ role: 'user', content: 'Count.' }],
  });
  return c.choices[0]!.message.content;
};

describe('no configuration', () => {
  test('the official client lists and chats with a library model right after start', async () => {
    const ids = (await openai.models.list()).data.map((m) => m.id).filter((id) => id.startsWith('embedded/'));
    assert.deepEqual(ids.sort(), ['embedded/draft.gguf', 'embedded/other.gguf', 'embedded/tiny.gguf']);
    const completion = await openai.chat.completions.create({
      model: 'embedded/tiny.gguf',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    assert.equal(completion.choices[0]!.finish_reason, 'length');
    assert.equal(completion.usage!.completion_tokens, 5);
  });

  test('the provider was created once, by the service, and audited as such', async () => {
    const events = await svc.request('GET', '/v1/audit-events?action=provider.create&resourceId=embedded');
    assert.equal(events.status, 200, events.text);
    assert.equal(events.json.data.length, 1);
    assert.equal(events.json.data[0].actorType, 'system');
  });
});

describe('load and unload', () => {
  // `wait=true`: the answer of the job's end (the action runs as a job; jobs-events.suite.ts covers the 202).
  const action = (id: string, name: string) =>
    svc.request('POST', `/v1/catalog/models/${encodeURIComponent(id)}/actions/${name}?wait=true`);

  test('load makes a model resident with the tuning, unload removes it, both audited', async () => {
    const loaded = await action('embedded/other.gguf', 'load');
    assert.equal(loaded.status, 200, loaded.text);
    assert.equal(loaded.json.loaded.modelId, 'embedded/other.gguf');
    const list = await svc.request('GET', '/v1/runtime/loaded');
    const row = list.json.data.find((m: { modelId: string }) => m.modelId === 'embedded/other.gguf');
    // A load action holds no session: the scheduler keeps the model for no reason of its own (its `warm` is empty).
    assert.deepEqual(row.resident.warm, []);
    assert.deepEqual(
      { ...row, memoryBytes: typeof row.memoryBytes, expiresAt: typeof row.expiresAt, resident: undefined },
      {
        modelId: 'embedded/other.gguf',
        runtime: 'embedded',
        contextSize: 512,
        sequences: 2,
        placement: 'cpu',
        memoryBytes: 'number',
        expiresAt: 'string',
        resident: undefined,
      },
    );
    const unloaded = await action('embedded/other.gguf', 'unload');
    assert.equal(unloaded.status, 200, unloaded.text);
    assert.equal(unloaded.json.wasLoaded, true);
    const after = await svc.request('GET', '/v1/runtime/loaded');
    assert.equal(
      after.json.data.some((m: { modelId: string }) => m.modelId === 'embedded/other.gguf'),
      false,
    );
    assert.equal((await action('embedded/other.gguf', 'unload')).json.wasLoaded, false);
    const audit = await svc.request('GET', '/v1/audit-events?resourceId=embedded%2Fother.gguf');
    assert.deepEqual(
      audit.json.data.map((e: { action: string }) => e.action),
      ['model.unload', 'model.unload', 'model.load'],
    );
  });

  test('a model used after unload loads again', async () => {
    assert.equal(typeof (await greedy('embedded/other.gguf')), 'string');
  });

  test('unknown models are 404, actions a kind lacks are 400, reading needs no manage scope', async () => {
    assert.equal((await action('embedded/missing.gguf', 'load')).status, 404);
    assert.equal((await action('embedded/tiny.gguf', 'pull')).status, 400);
    assert.equal((await action('embedded/tiny.gguf', 'explode')).status, 400);
    const created = await svc.request('POST', '/v1/providers', {
      body: { id: 'oc', kind: 'openai_compatible', baseUrl: 'http://127.0.0.1:9', autoProxyModels: false },
    });
    assert.equal(created.status, 201, created.text);
    const model = await svc.request('POST', '/v1/catalog/models', {
      body: { providerId: 'oc', upstreamModelId: 'm', families: ['styleA.chat_completions'] },
    });
    assert.equal(model.status, 201, model.text);
    const refused = await action('oc/m', 'load');
    assert.equal(refused.status, 400);
    assert.equal(refused.json.error.param, 'action');
    assert.equal(
      (await svc.request('POST', '/v1/catalog/models/embedded%2Ftiny.gguf/actions/load', { token: null })).status,
      401,
    );
  });
});

describe('styleB messages', () => {
  test('the official anthropic client streams a message with usage', async () => {
    const anthropic = new Anthropic({ baseURL: svc.url, apiKey: svc.adminToken, maxRetries: 0 });
    const stream = anthropic.messages.stream({
      model: 'embedded/tiny.gguf',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'Hello' }],
    });
    let text = '';
    stream.on('text', (t) => (text += t));
    const message = await stream.finalMessage();
    assert.equal(message.stop_reason, 'max_tokens');
    assert.equal(message.usage.output_tokens, 8);
    assert.ok(message.usage.input_tokens > 0);
    const block = message.content[0];
    assert.equal(block?.type === 'text' ? block.text : null, text);
    assert.ok(text.length > 0);
  });

  test('a non-streamed message, and a missing max_tokens is 400', async () => {
    const reply = await svc.request('POST', '/v1/messages', {
      body: {
        model: 'embedded/tiny.gguf',
        max_tokens: 4,
        system: 'Be brief.',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
      },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.json.type, 'message');
    assert.equal(reply.json.stop_reason, 'max_tokens');
    assert.equal(reply.json.usage.output_tokens, 4);
    const bad = await svc.request('POST', '/v1/messages', {
      body: { model: 'embedded/tiny.gguf', messages: [{ role: 'user', content: 'Hi' }] },
    });
    assert.equal(bad.status, 400);
  });
});

describe('draft-model acceleration', () => {
  test('greedy output is the same with a draft, and usage rows carry the draft counters', async () => {
    const plain = await greedy('embedded/tiny.gguf');
    const patched = await svc.request('PATCH', '/v1/catalog/models/embedded%2Ftiny.gguf', {
      body: { acceleration: { mode: 'draft', draftModelId: 'embedded/draft.gguf' } },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(await greedy('embedded/tiny.gguf'), plain);
    const today = new Date().toISOString().slice(0, 10);
    let rows: {
      mode: string;
      draftModelId: string | null;
      draftTokens: number | null;
      acceptedDraftTokens: number | null;
      generationMs: number;
    }[] = [];
    // The meter commits within 250 ms of a call ending.
    for (let i = 0; i < 40; i++) {
      const reply = await svc.request(
        'GET',
        `/v1/usage/acceleration?from=${today}&to=${today}&modelId=embedded%2Ftiny.gguf`,
      );
      assert.equal(reply.status, 200, reply.text);
      rows = reply.json.data;
      if (rows.some((r) => r.mode === 'draft')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const draft = rows.find((r) => r.mode === 'draft');
    const none = rows.find((r) => r.mode === 'none');
    assert.ok(draft && none, JSON.stringify(rows));
    assert.equal(draft.draftModelId, 'embedded/draft.gguf');
    assert.ok(draft.draftTokens! > 0, JSON.stringify(draft));
    assert.ok(
      draft.acceptedDraftTokens! > 0 && draft.acceptedDraftTokens! <= draft.draftTokens!,
      JSON.stringify(draft),
    );
    assert.ok(draft.generationMs > 0 && none.generationMs > 0);
  });
});
