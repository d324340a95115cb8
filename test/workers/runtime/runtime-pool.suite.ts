import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import type { ServiceError } from '../../../protocol/errors.ts';
import type { GatewayOp, UsageReport } from '../../../protocol/gateway.ts';
import { DEFAULT_TIMEOUTS } from '../../../protocol/providers.ts';
import { chunkBytes, wholeText, type RelayRequest } from '../../../protocol/relay.ts';
import type { RuntimeEvent } from '../../../protocol/runtime.ts';
import type { RelayPool } from '../../../workers/shared/relay-sink.ts';
import { createRuntimePool } from '../../../workers/runtime/runtime-pool.ts';
import {
  writeCorruptModel,
  writeRefusedModel,
  writeTinyModel,
  writeTruncatedModel,
  writeWrongShapeModel,
} from '../../helpers/gguf.ts';

// The runtime pool in-process: real llama.cpp on tiny generated models, no HTTP.

interface Outcome {
  status: number;
  headers: Record<string, string>;
  text: string;
  usage: UsageReport | null;
  error: ServiceError | null;
}

/** A call to the embedded provider `local`, its JSON body as bytes, as the edge hands it over. */
function embeddedRequest(op: GatewayOp, model: string, body: object): RelayRequest {
  return {
    op,
    target: { id: 'local', kind: 'embedded', baseUrl: '', hints: {}, timeouts: { ...DEFAULT_TIMEOUTS } },
    credentialRef: null,
    credentialId: null,
    requestId: 'req_test',
    clientModel: `local/${model}`,
    upstreamModelId: model,
    params: {},
    query: '',
    headers: {},
    body: new TextEncoder().encode(JSON.stringify(body)).buffer as ArrayBuffer,
    bodyStreamed: false,
  };
}

function call(pool: RelayPool, op: GatewayOp, model: string, body: object): Promise<Outcome> {
  return new Promise((resolve) => {
    const decoder = new TextDecoder();
    const o: Outcome = { status: 0, headers: {}, text: '', usage: null, error: null };
    pool.start(embeddedRequest(op, model, body), {
      whole(status, headers, b, end) {
        Object.assign(o, { status, headers, text: wholeText(b), usage: end.usage });
        resolve(o);
      },
      head(status, headers) {
        Object.assign(o, { status, headers });
      },
      data(chunks) {
        for (const c of chunks) o.text += decoder.decode(chunkBytes(c), { stream: true });
      },
      end(end) {
        o.usage = end.usage;
        resolve(o);
      },
      error(error, usage) {
        Object.assign(o, { error, usage });
        resolve(o);
      },
      aborted() {
        throw new Error('not aborted here');
      },
    });
  });
}

const events = (text: string) =>
  text
    .split('\n\n')
    .filter(Boolean)
    .map((e) => e.replace(/^data: /, ''));

describe('embedded runtime pool', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sy-runtime-'));
  const models = join(dir, 'models');
  let pool: RelayPool;
  const news: RuntimeEvent[] = [];
  before(() => {
    mkdirSync(join(models, 'sub'), { recursive: true });
    writeTinyModel(join(models, 'tiny.gguf'));
    writeTinyModel(join(models, 'sub', 'tiny-f16.gguf'), { weightType: 1, seed: 3 });
    writeCorruptModel(join(models, 'corrupt.gguf'));
    writeTruncatedModel(join(models, 'truncated.gguf'));
    writeWrongShapeModel(join(models, 'wrong-shape.gguf'));
    writeRefusedModel(join(models, 'refused.gguf'));
    pool = createRuntimePool({
      dataDir: dir,
      modelsDirectory: () => null,
      log: pino({ level: 'silent' }),
      tuning: () => ({ contextSize: 512, threads: 1, gpuLayers: 0, parallel: 4, batchSize: 0 }),
      keepAliveSeconds: () => -1,
      onEvent: (event) => news.push(event),
    });
  });
  after(async () => {
    await pool.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers a chat completion with the usage llama.cpp counted', async () => {
    const o = await call(pool, 'chat.completions', 'tiny.gguf', {
      model: 'x',
      max_tokens: 12,
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello' },
      ],
    });
    assert.equal(o.error, null);
    assert.equal(o.status, 200);
    const answer = JSON.parse(o.text);
    assert.equal(answer.object, 'chat.completion');
    assert.equal(answer.model, 'local/tiny.gguf');
    assert.equal(answer.choices[0].message.role, 'assistant');
    assert.equal(typeof answer.choices[0].message.content, 'string');
    assert.ok(answer.usage.prompt_tokens > 5, 'the template and both messages were evaluated');
    assert.ok(answer.usage.completion_tokens >= 1 && answer.usage.completion_tokens <= 12);
    assert.equal(o.usage?.inputTokens, answer.usage.prompt_tokens);
    assert.equal(o.usage?.outputTokens, answer.usage.completion_tokens);
  });

  it('streams styleA chunks ending in a usage chunk and [DONE]', async () => {
    const o = await call(pool, 'chat.completions', 'sub/tiny-f16.gguf', {
      model: 'x',
      max_tokens: 8,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(o.error, null);
    assert.equal(o.headers['content-type'], 'text/event-stream');
    const list = events(o.text);
    assert.equal(list.at(-1), '[DONE]');
    const chunks = list.slice(0, -1).map((e) => JSON.parse(e));
    assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
    assert.equal(chunks.at(-2).choices[0].finish_reason, 'length');
    assert.equal(chunks.at(-1).usage.completion_tokens, 8);
    assert.equal(o.usage?.outputTokens, 8);
  });

  it('returns embeddings as floats and as base64 float32', async () => {
    const f = await call(pool, 'embeddings', 'tiny.gguf', { model: 'x', input: ['hello', 'world'] });
    const b = await call(pool, 'embeddings', 'tiny.gguf', { model: 'x', input: 'hello', encoding_format: 'base64' });
    const floats = JSON.parse(f.text);
    assert.equal(floats.data.length, 2);
    assert.equal(floats.data[0].embedding.length, 64);
    const raw = Buffer.from(JSON.parse(b.text).data[0].embedding, 'base64');
    const decoded = [...new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4)];
    assert.deepEqual(decoded, floats.data[0].embedding);
    assert.ok(floats.usage.prompt_tokens >= 2);
  });

  it('completes eight concurrent streams on four sequences', async () => {
    const body = (i: number) => ({
      model: 'x',
      max_tokens: 16,
      stream: true,
      messages: [{ role: 'user', content: `request ${i}` }],
    });
    const all = await Promise.all(
      Array.from({ length: 8 }, (_, i) => call(pool, 'chat.completions', 'tiny.gguf', body(i))),
    );
    for (const o of all) {
      assert.equal(o.error, null);
      assert.equal(events(o.text).at(-1), '[DONE]');
      assert.equal(o.usage?.outputTokens, 16);
    }
  });

  it('ends a stream the edge aborts with the tokens used until then, and nothing else', async () => {
    // The tiny model runs to max_tokens (it never samples its end token), so 400 tokens outlast the abort.
    const seen: string[] = [];
    let abortAnswer: boolean | undefined;
    const usage = await new Promise<UsageReport | null>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no aborted message; seen: ${seen.join(' ')}`)), 10_000);
      const handle = pool.start(
        embeddedRequest('chat.completions', 'tiny.gguf', {
          model: 'x',
          max_tokens: 400,
          stream: true,
          messages: [{ role: 'user', content: 'hello' }],
        }),
        {
          whole: () => reject(new Error('a whole answer')),
          head: () => seen.push('head'),
          data(chunks) {
            seen.push('data');
            // The first generated token (the role chunk comes before any).
            const text = chunks.map((c) => Buffer.from(chunkBytes(c)).toString('utf8')).join('');
            if (abortAnswer === undefined && /"content":"[^"]/.test(text)) abortAnswer = handle.abort();
          },
          end: () => reject(new Error('the stream ended')),
          error: (error) => reject(error),
          aborted(u) {
            seen.push('aborted');
            clearTimeout(timer);
            resolve(u);
          },
        },
      );
    });
    assert.equal(abortAnswer, true, 'the pool says the aborted message is still to come');
    assert.ok(usage !== null);
    assert.ok(usage.inputTokens! > 5, 'the prompt was evaluated');
    assert.ok(
      usage.outputTokens! >= 1 && usage.outputTokens! < 400,
      `generated until the abort: ${usage.outputTokens}`,
    );
    assert.equal(usage.totalTokens, usage.inputTokens! + usage.outputTokens!);
    // Nothing reaches the edge after the aborted message; the next call is served as usual.
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(seen.at(-1), 'aborted');
    assert.equal(seen.filter((s) => s === 'aborted').length, 1);
    const next = await call(pool, 'chat.completions', 'tiny.gguf', {
      model: 'x',
      max_tokens: 2,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(next.error, null);
  });

  it('says no message follows when a call is aborted before the runtime has it', async () => {
    const sink = {
      whole: () => assert.fail('answered after abort'),
      head: () => assert.fail('head after abort'),
      data: () => assert.fail('data after abort'),
      end: () => assert.fail('end after abort'),
      error: () => assert.fail('error after abort'),
      aborted: () => assert.fail('aborted message'),
    };
    const handle = pool.start(
      embeddedRequest('chat.completions', 'tiny.gguf', { model: 'x', messages: [{ role: 'user', content: 'hi' }] }),
      sink,
    );
    assert.equal(handle.abort(), false);
    await new Promise((r) => setTimeout(r, 200));
  });

  // A 400 with the file's health and why: the official clients retry 409 and 5xx, and nothing changes until the file
  // does.
  for (const [file, health, why] of [
    ['corrupt.gguf', 'corrupt', /tensor count/],
    ['truncated.gguf', 'partial', /tensor data ends at byte/],
    ['wrong-shape.gguf', 'corrupt', /token_embd\.weight/],
    ['refused.gguf', 'corrupt', /^llama\.cpp refused it: .*missing tensor 'output_norm\.weight'/],
  ] as const) {
    it(`refuses ${file} as ${health}, says why, and keeps serving`, async () => {
      const o = await call(pool, 'chat.completions', file, {
        model: 'x',
        max_tokens: 2,
        messages: [{ role: 'user', content: 'hi' }],
      });
      assert.equal(o.error?.code, 'INVALID_REQUEST');
      assert.equal(o.error?.param, 'model');
      assert.equal(o.error?.details.health, health);
      assert.match(String(o.error?.details.problem), why);
      assert.ok(o.error?.message.includes(String(o.error.details.problem)), 'the message says why too');
      assert.equal(o.error?.message.includes(dir), false, 'no path in the error');
      const ok = await call(pool, 'chat.completions', 'tiny.gguf', {
        model: 'x',
        max_tokens: 2,
        messages: [{ role: 'user', content: 'hi' }],
      });
      assert.equal(ok.status, 200);
    });
  }

  it('tells the edge which file version llama.cpp refused, on every attempt', async () => {
    const refused = news.filter((e) => e.t === 'refused');
    assert.equal(refused.length, 1, JSON.stringify(news));
    const [event] = refused;
    assert.ok(event?.t === 'refused');
    assert.equal(event.name, 'refused.gguf');
    assert.equal(event.sizeBytes, statSync(join(dir, 'models', 'refused.gguf')).size);
    assert.match(event.problem, /missing tensor 'output_norm\.weight'/);
    await call(pool, 'chat.completions', 'refused.gguf', {
      model: 'x',
      max_tokens: 2,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(news.filter((e) => e.t === 'refused').length, 2, 'a cached verdict is told again on every attempt');
  });

  it('answers MODEL_NOT_FOUND for names outside the library', async () => {
    for (const name of ['missing.gguf', '../models/tiny.gguf', '/etc/passwd.gguf', 'tiny.bin']) {
      const o = await call(pool, 'chat.completions', name, { model: 'x', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(o.error?.code, 'MODEL_NOT_FOUND', name);
    }
  });

  it('rejects invalid parameters naming them', async () => {
    const o = await call(pool, 'chat.completions', 'tiny.gguf', {
      model: 'x',
      temperature: 9,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(o.error?.code, 'INVALID_REQUEST');
    assert.equal(o.error?.param, 'temperature');
  });
});
