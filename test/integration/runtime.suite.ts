import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { writeCorruptModel, writeTinyModel, writeTruncatedModel, writeWrongShapeModel } from '../helpers/gguf.ts';
import { tempHome } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// The embedded runtime behind the real service: the model library route, and the official openai client
// against an `embedded` provider whose models are tiny GGUF files written by the test. Bad files are
// listed with their health and cannot take the service down.

let svc: InProcessService;
let home: string;

before(async () => {
  home = tempHome();
  const models = join(home, 'models');
  mkdirSync(join(models, 'nested'), { recursive: true });
  writeTinyModel(join(models, 'tiny.gguf'));
  writeTinyModel(join(models, 'nested', 'tiny-f16.gguf'), { weightType: 1 });
  writeCorruptModel(join(models, 'corrupt.gguf'));
  writeTruncatedModel(join(models, 'truncated.gguf'));
  writeWrongShapeModel(join(models, 'wrong-shape.gguf'));
  svc = await startInProcess({ home });
});
after(async () => {
  await svc?.stop();
});

describe('GET /v1/runtime/models', () => {
  test('lists every GGUF with its health and metadata, never a path', async () => {
    const reply = await svc.request('GET', '/v1/runtime/models');
    assert.equal(reply.status, 200);
    const byName = Object.fromEntries(reply.json.data.map((m: { name: string; health: string }) => [m.name, m]));
    assert.deepEqual(Object.keys(byName).sort(), [
      'corrupt.gguf',
      'nested/tiny-f16.gguf',
      'tiny.gguf',
      'truncated.gguf',
      'wrong-shape.gguf',
    ]);
    assert.deepEqual(
      Object.fromEntries(Object.entries(byName).map(([k, v]) => [k, (v as { health: string }).health])),
      {
        'corrupt.gguf': 'corrupt',
        'nested/tiny-f16.gguf': 'ok',
        'tiny.gguf': 'ok',
        'truncated.gguf': 'partial',
        'wrong-shape.gguf': 'corrupt',
      },
    );
    assert.equal(byName['tiny.gguf'].architecture, 'llama');
    assert.equal(byName['tiny.gguf'].fileType, 'F32');
    assert.equal(byName['nested/tiny-f16.gguf'].fileType, 'F16');
    assert.equal(byName['tiny.gguf'].contextLength, 2048);
    assert.equal(reply.text.includes(home), false, 'the data directory leaked');
  });

  test('needs a token', async () => {
    assert.equal((await svc.request('GET', '/v1/runtime/models', { token: null })).status, 401);
  });
});

describe('an embedded provider through the official client', () => {
  let client: OpenAI;
  before(async () => {
    const created = await svc.request('POST', '/v1/providers', { body: { id: 'local', kind: 'embedded' } });
    assert.equal(created.status, 201, created.text);
    const refreshed = await svc.request('POST', '/v1/providers/local/actions/refresh-models');
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.equal(refreshed.json.modelCount, 2, 'the two healthy library models');
    client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
  });

  test('the library models are listed as embedded/<name>, healthy ones only', async () => {
    const ids = (await client.models.list()).data.map((m) => m.id).filter((id) => id.startsWith('local/'));
    assert.deepEqual(ids.sort(), ['local/nested/tiny-f16.gguf', 'local/tiny.gguf']);
  });

  test('streams a chat completion and reports usage', async () => {
    const stream = await client.chat.completions.create({
      model: 'local/tiny.gguf',
      stream: true,
      max_tokens: 12,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Say hello.' }],
    });
    let text = '';
    let completion = 0;
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) completion = chunk.usage.completion_tokens;
    }
    assert.equal(finish, 'length');
    assert.equal(completion, 12);
    assert.ok(text.length > 0);
  });

  test('a client that leaves mid-stream is metered with the tokens used until then', async () => {
    // The tiny model runs to max_tokens, so 400 tokens outlast the client.
    const stream = await client.chat.completions.create({
      model: 'local/tiny.gguf',
      stream: true,
      max_tokens: 400,
      messages: [{ role: 'user', content: 'Leave early.' }],
    });
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) break;
    const line = await svc.waitForLog((l) => l.msg === 'usage' && l.providerId === 'local' && l.outcome === 'aborted');
    const usage = line.usage as Record<string, number>;
    assert.ok(usage.inputTokens! > 5, 'the prompt was evaluated');
    assert.ok(
      usage.outputTokens! >= 1 && usage.outputTokens! < 400,
      `generated until the client left: ${usage.outputTokens}`,
    );
  });

  test('returns embeddings of the model width', async () => {
    const result = await client.embeddings.create({ model: 'local/tiny.gguf', input: ['one', 'two'] });
    assert.equal(result.data.length, 2);
    assert.equal(result.data[0]!.embedding.length, 64);
    assert.ok(result.usage.prompt_tokens >= 2);
  });

  test('eight concurrent streams on one loaded model all complete', async () => {
    const one = async (i: number) => {
      const stream = await client.chat.completions.create({
        model: 'local/tiny.gguf',
        stream: true,
        max_tokens: 10,
        messages: [{ role: 'user', content: `n${i}` }],
      });
      let finish: string | null = null;
      for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
      return finish;
    };
    assert.deepEqual(await Promise.all(Array.from({ length: 8 }, (_, i) => one(i))), Array(8).fill('length'));
  });

  test('the service is still up after the bad files were listed and refused', async () => {
    assert.equal((await svc.request('GET', '/v1/providers/local')).status, 200);
  });
});
