import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import {
  writeCorruptModel,
  writeRefusedModel,
  writeTinyModel,
  writeTruncatedModel,
  writeWrongShapeModel,
} from '../helpers/gguf.ts';
import { tempHome } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Local models that explain themselves, through the real service and the official clients (issue 23, item 3):
// answers without max_tokens stop at the context, unhealthy files say what is wrong with them, the library
// follows the folder without a restart, `embedded/<name>` works without `.gguf`, and idle models are unloaded
// after the keep-alive.

const CONTEXT = 256;
let svc: InProcessService;
let home: string;
let models: string;
let openai: OpenAI;
let anthropic: Anthropic;

before(async () => {
  home = tempHome();
  models = join(home, 'models');
  mkdirSync(models, { recursive: true });
  writeTinyModel(join(models, 'tiny.gguf'));
  writeCorruptModel(join(models, 'corrupt.gguf'));
  writeTruncatedModel(join(models, 'truncated.gguf'));
  writeWrongShapeModel(join(models, 'wrong-shape.gguf'));
  writeFileSync(join(models, 'not-gguf.gguf'), 'this is a text file with the wrong name\n');
  writeRefusedModel(join(models, 'refused.gguf'));
  svc = await startInProcess({ home });
  const patched = await svc.request('PATCH', '/v1/settings', {
    body: { runtime: { tuning: { contextSize: CONTEXT, threads: 1, parallel: 1 } } },
  });
  assert.equal(patched.status, 200, patched.text);
  openai = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: svc.url, apiKey: svc.adminToken, maxRetries: 0 });
});
after(async () => {
  await svc?.stop();
  rmSync(home, { recursive: true, force: true });
});

describe('answers without max_tokens stop at the context', () => {
  const messages = [{ role: 'user' as const, content: 'Go on.' }];

  test('styleA, not streamed: 200 with finish_reason length and the context filled', async () => {
    // The official client sends no max_tokens unless told to.
    const c = await openai.chat.completions.create({ model: 'embedded/tiny', temperature: 0, messages });
    assert.equal(c.choices[0]!.finish_reason, 'length');
    assert.ok(c.usage!.total_tokens <= CONTEXT && c.usage!.total_tokens >= CONTEXT - 2, JSON.stringify(c.usage));
    assert.equal(c.model, 'embedded/tiny');
  });

  test('styleA, streamed: the stream ends with finish_reason length', async () => {
    const stream = await openai.chat.completions.create({
      model: 'embedded/tiny.gguf',
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
      messages,
    });
    let finish: string | null = null;
    let total = 0;
    for await (const chunk of stream) {
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) total = chunk.usage.total_tokens;
    }
    assert.equal(finish, 'length');
    assert.ok(total <= CONTEXT && total >= CONTEXT - 2, String(total));
  });

  test('styleB, a max_tokens beyond the context: stop_reason max_tokens, streamed and not', async () => {
    const params = {
      model: 'embedded/tiny',
      max_tokens: 4096,
      temperature: 0,
      messages: [{ role: 'user' as const, content: 'Go on.' }],
    };
    const whole = await anthropic.messages.create(params);
    assert.equal(whole.stop_reason, 'max_tokens');
    assert.ok(whole.usage.input_tokens + whole.usage.output_tokens <= CONTEXT);
    const streamed = await anthropic.messages.stream(params).finalMessage();
    assert.equal(streamed.stop_reason, 'max_tokens');
  });

  test('a prompt larger than the context is a 400 naming the limit and the prompt size', async () => {
    const reply = await svc.request('POST', '/v1/chat/completions', {
      body: { model: 'embedded/tiny', messages: [{ role: 'user', content: 'x'.repeat(1000) }] },
    });
    assert.equal(reply.status, 400, reply.text);
    assert.equal(reply.json.error.code, 'INVALID_REQUEST');
    assert.equal(reply.json.error.param, 'messages');
    assert.equal(reply.json.error.details.contextSize, CONTEXT);
    assert.ok(reply.json.error.details.promptTokens > CONTEXT);
    assert.match(
      reply.json.error.message,
      new RegExp(`prompt is ${reply.json.error.details.promptTokens} tokens.*context of ${CONTEXT} tokens`),
    );
    const streamed = await svc.request('POST', '/v1/chat/completions', {
      body: { model: 'embedded/tiny', stream: true, messages: [{ role: 'user', content: 'x'.repeat(1000) }] },
    });
    assert.equal(streamed.status, 400, 'refused before a stream head');
  });
});

describe('unhealthy model files explain themselves', () => {
  const EXPECTED = {
    'corrupt.gguf': ['corrupt', /tensor count/],
    'truncated.gguf': ['partial', /tensor data ends/],
    'wrong-shape.gguf': ['corrupt', /token_embd/],
    'not-gguf.gguf': ['corrupt', /not a GGUF file/],
  } as const;

  test('the start logs one warning per unhealthy file, by name, never a path', async () => {
    const lines = svc.logLines().filter((l) => l.msg === 'unhealthy model file in the library');
    assert.deepEqual(lines.map((l) => l.model).sort(), Object.keys(EXPECTED).sort());
    for (const l of lines) assert.equal(l.health, EXPECTED[l.model as keyof typeof EXPECTED][0]);
    assert.equal(JSON.stringify(lines).includes(home), false);
  });

  for (const [file, [health, why]] of Object.entries(EXPECTED)) {
    test(`${file} answers 400 with its health and why, with or without .gguf`, async () => {
      for (const model of [`embedded/${file}`, `embedded/${file.replace(/\.gguf$/, '')}`]) {
        const reply = await svc.request('POST', '/v1/chat/completions', {
          body: { model, messages: [{ role: 'user', content: 'hi' }] },
        });
        assert.equal(reply.status, 400, reply.text);
        assert.equal(reply.json.error.param, 'model');
        assert.equal(reply.json.error.details.health, health);
        assert.match(reply.json.error.details.problem, why);
        assert.match(reply.json.error.message, /cannot be served: its file is/);
        assert.equal(reply.text.includes(home), false);
      }
    });
  }

  test('the official client gets a BadRequestError it does not retry', async () => {
    const err = await openai.chat.completions
      .create({ model: 'embedded/corrupt', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.BadRequestError, String(err));
  });

  test('a file llama.cpp refuses says why, and the library marks it corrupt with that reason', async () => {
    const before = await svc.request('GET', '/v1/runtime/models');
    assert.equal(
      before.json.data.find((m: { name: string }) => m.name === 'refused.gguf').health,
      'ok',
      'the header check passes',
    );
    const reply = await svc.request('POST', '/v1/chat/completions', {
      body: { model: 'embedded/refused', messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(reply.status, 400, reply.text);
    assert.equal(reply.json.error.details.health, 'corrupt');
    assert.match(reply.json.error.details.problem, /^llama\.cpp refused it: .*missing tensor 'output_norm\.weight'/);
    const listed = await svc.request('GET', '/v1/runtime/models');
    const row = listed.json.data.find((m: { name: string }) => m.name === 'refused.gguf');
    assert.deepEqual(
      { health: row.health, problem: row.problem },
      { health: 'corrupt', problem: reply.json.error.details.problem },
    );
    assert.equal(listed.text.includes(home), false);
    const warned = await svc.waitForLog(
      (l) => l.msg === 'unhealthy model file in the library' && l.model === 'refused.gguf',
    );
    assert.equal(warned.problem, reply.json.error.details.problem);
  });
});

describe('the library follows the folder', () => {
  test('a file dropped in is served without a restart, and a removed one leaves', async () => {
    const file = join(models, 'fresh.gguf');
    writeTinyModel(file, { seed: 11 });
    const relisted = (field: 'added' | 'removed') => (l: Record<string, unknown>) =>
      l.msg === 're-listed the changed model library' && (l[field] as string[]).includes('fresh.gguf');
    await svc.waitForLog(relisted('added'));
    assert.ok((await openai.models.list()).data.some((m) => m.id === 'embedded/fresh.gguf'));
    const c = await openai.chat.completions.create({
      model: 'embedded/fresh',
      max_tokens: 3,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(c.choices[0]!.finish_reason, 'length');
    rmSync(file);
    await svc.waitForLog(relisted('removed'));
    assert.equal(
      (await openai.models.list()).data.some((m) => m.id === 'embedded/fresh.gguf'),
      false,
    );
  });
});

describe('keep-alive', () => {
  const loaded = async () =>
    (await svc.request('GET', '/v1/runtime/loaded')).json.data as { modelId: string; expiresAt: string | null }[];
  const chat = () =>
    openai.chat.completions.create({
      model: 'embedded/tiny',
      max_tokens: 2,
      messages: [{ role: 'user', content: 'hi' }],
    });

  test('defaults to 300 seconds, reported as expiresAt', async () => {
    assert.equal((await svc.request('GET', '/v1/settings')).json.runtime.keepAliveSeconds, 300);
    await chat();
    const row = (await loaded()).find((m) => m.modelId === 'embedded/tiny.gguf');
    const left = Date.parse(row!.expiresAt!) - Date.now();
    assert.ok(left > 200_000 && left <= 300_000, `expires in ${left} ms`);
  });

  test('the load action accepts a name without .gguf', async () => {
    const reply = await svc.request('POST', '/v1/catalog/models/embedded%2Ftiny/actions/load?wait=true');
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.json.modelId, 'embedded/tiny.gguf');
  });

  test('-1 keeps a model loaded with no expiry; 0 unloads it right after the call', async () => {
    assert.equal(
      (await svc.request('PATCH', '/v1/settings', { body: { runtime: { keepAliveSeconds: -1 } } })).status,
      200,
    );
    await chat();
    assert.equal((await loaded()).find((m) => m.modelId === 'embedded/tiny.gguf')?.expiresAt, null);
    assert.equal(
      (await svc.request('PATCH', '/v1/settings', { body: { runtime: { keepAliveSeconds: 0 } } })).status,
      200,
    );
    await chat();
    await svc.waitForLog((l) => l.msg === 'unloaded an idle embedded model' && l.model === 'tiny.gguf');
    assert.equal(
      (await loaded()).some((m) => m.modelId === 'embedded/tiny.gguf'),
      false,
    );
    // Unloaded is not gone: the next call loads it again.
    assert.equal((await chat()).choices[0]!.finish_reason, 'length');
  });

  test('the setting is validated', async () => {
    for (const bad of [-2, 1.5, 604_801, '300', null]) {
      const reply = await svc.request('PATCH', '/v1/settings', { body: { runtime: { keepAliveSeconds: bad } } });
      assert.equal(reply.status, 400, `${bad}: ${reply.text}`);
      assert.equal(reply.json.error.code, 'INVALID_REQUEST');
    }
  });
});
