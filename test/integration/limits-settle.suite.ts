import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import * as openaiFake from '../fakes/openai.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// What a call settles to under a limit (W4.6 items 2 and 3): a route pack's dollar limit at the price of the
// route that answered, as usage prices it, and a stream whose usage never arrives at an estimate, never 0, with
// the same figure metered in usage and marked as estimated.

const KEY = `fake-openai-key-${process.pid}`;
type UsageTotals = {
  requests: number;
  failedRequests: number;
  totalTokens: number;
  costUsd: number;
  estimatedUsageRequests: number;
};
let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let agent: { id: string; secret: string };

async function ok(method: string, path: string, body?: unknown, status = 200) {
  const reply = await svc.request(method, path, body === undefined ? {} : { body });
  assert.equal(reply.status, status, `${method} ${path}: ${reply.text}`);
  return reply.json;
}

const client = () => new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: agent.secret, maxRetries: 0 });
const used = async (limitId: string): Promise<number> =>
  (await ok('GET', `/v1/limits/${limitId}`)).counters[0]?.used ?? 0;
/** The token's usage totals once the meter has committed what `ready` waits for (it commits in batches). */
async function usageOnce(modelId: string, ready: (totals: UsageTotals) => boolean): Promise<UsageTotals> {
  for (const deadline = Date.now() + 10_000; ; ) {
    const query = `tokenId=${agent.id}&modelId=${encodeURIComponent(modelId)}`;
    const { totals } = await ok('GET', `/v1/usage/summary?${query}`);
    if (ready(totals) || Date.now() > deadline) return totals;
    await new Promise((r) => setTimeout(r, 50));
  }
}
const usageLines = (outcome?: string) =>
  svc.logLines().filter((l) => l.msg === 'usage' && (outcome === undefined || l.outcome === outcome));

async function model(id: string, providerId: string, pricing: { inputPerMTok: number; outputPerMTok: number }) {
  await ok(
    'POST',
    '/v1/catalog/models',
    { providerId, upstreamModelId: id, families: ['styleA.chat_completions'] },
    201,
  );
  await ok('PATCH', `/v1/catalog/models/${encodeURIComponent(`${providerId}/${id}`)}`, { pricing });
}

before(async () => {
  oa = await openaiFake.start({ apiKey: KEY });
  oa.setModels(['write-dear', 'read-dear', 'cheap', 'plain'].map((id) => ({ id })));
  svc = await startInProcess();
  await ok('POST', '/v1/providers', { id: 'oa', kind: 'openai', baseUrl: oa.baseUrl, credential: KEY }, 201);
  await ok(
    'POST',
    '/v1/providers',
    { id: 'dead', kind: 'openai', baseUrl: 'http://127.0.0.1:1/v1', credential: KEY },
    201,
  );
  const created = await svc.request('POST', '/v1/tokens', { body: { name: 'settle', scopes: ['inference'] } });
  svc.markSecretBearing(created);
  agent = { id: created.json.token.id, secret: created.json.secret };
});
after(async () => {
  await svc?.stop();
  await oa?.close();
});

describe('a route pack under a dollar limit', () => {
  test('settles at the price of the route that answered, and refuses once that price has spent the limit', async () => {
    // The first route is cheap to read and dear to write, the second the other way round: priced by the sum
    // of its prices, the second is "dearest", and each call used to settle at its price whichever answered.
    await model('write-dear', 'oa', { inputPerMTok: 1, outputPerMTok: 50 });
    await model('read-dear', 'oa', { inputPerMTok: 100, outputPerMTok: 1 });
    await ok(
      'POST',
      '/v1/route-packs',
      {
        slug: 'split',
        displayName: 'write-dear first',
        routes: [
          { id: 'a', model: 'oa/write-dear' },
          { id: 'b', model: 'oa/read-dear' },
        ],
        fallback: { model: 'oa/read-dear' },
      },
      201,
    );
    const limit = await ok(
      'POST',
      '/v1/limits',
      { name: 'pack usd', scope: { kind: 'route_pack', id: 'split' }, window: 'day', metric: 'usd', max: 1 },
      201,
    );
    // Each call: 100 input and 2,000 output tokens on the first route, $0.1001 as usage prices it.
    oa.setUsage({ inputTokens: 100, outputTokens: 2000, cachedTokens: 0, reasoningTokens: 0 });
    const callUsd = (100 * 1 + 2000 * 50) / 1e6;
    let answered = 0;
    for (let i = 0; i < 40; i++) {
      try {
        const stream = await client().chat.completions.create({
          model: '@route/split',
          max_tokens: 2000,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        });
        for await (const _ of stream) {
          // read the whole answer
        }
        answered++;
        await svc.waitForLog(() => usageLines().length >= answered);
      } catch (err) {
        assert.ok(err instanceof OpenAI.RateLimitError, String(err));
        break;
      }
    }
    // Nine calls spend $0.9009, as usage prices them; the tenth call's worst case ($0.1 of output alone) no
    // longer fits. Settled at the second route's price, forty calls used to pass, counted at $0.0021 each.
    assert.equal(answered, 9);
    assert.equal(Math.round((await used(limit.id)) * 1e9), Math.round(callUsd * 9 * 1e9));
    const totals = await usageOnce('oa/write-dear', (t) => t.requests >= 9);
    assert.equal(Math.round(totals.costUsd * 1e9), Math.round(callUsd * 9 * 1e9));
    await ok('DELETE', `/v1/limits/${limit.id}`);
  });

  test('a dead dear first route ahead of a cheap live one settles at the cheap one', async () => {
    await model('dear-dead', 'dead', { inputPerMTok: 100, outputPerMTok: 1000 });
    await model('cheap', 'oa', { inputPerMTok: 1, outputPerMTok: 1 });
    await ok(
      'POST',
      '/v1/route-packs',
      {
        slug: 'fallback-cheap',
        displayName: 'dead dear, then cheap',
        routes: [
          { id: 'dear', model: 'dead/dear-dead' },
          { id: 'cheap', model: 'oa/cheap' },
        ],
        fallback: { model: 'oa/cheap' },
      },
      201,
    );
    const limit = await ok(
      'POST',
      '/v1/limits',
      { name: 'cheap usd', scope: { kind: 'route_pack', id: 'fallback-cheap' }, window: 'day', metric: 'usd', max: 1 },
      201,
    );
    oa.setUsage({ inputTokens: 100, outputTokens: 50, cachedTokens: 0, reasoningTokens: 0 });
    const before = usageLines().length;
    await client().chat.completions.create({
      model: '@route/fallback-cheap',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'hi' }],
    });
    await svc.waitForLog(() => usageLines().length > before);
    assert.equal(Math.round((await used(limit.id)) * 1e9), (100 + 50) * 1e3);
    await ok('DELETE', `/v1/limits/${limit.id}`);
  });
});

describe('a stream whose usage never arrives', () => {
  test('settles to its input estimate plus the output streamed, metered the same and marked estimated', async () => {
    await model('plain', 'oa', { inputPerMTok: 1, outputPerMTok: 1 });
    const limit = await ok(
      'POST',
      '/v1/limits',
      { name: 'tokens', scope: { kind: 'token', id: agent.id }, window: 'day', metric: 'total_tokens', max: 5000 },
      201,
    );
    // With its own output bound the body goes upstream as the client sent it: its bytes are what is estimated.
    const body = {
      model: 'oa/plain',
      stream: true as const,
      max_tokens: 100,
      messages: [{ role: 'user' as const, content: 'hi '.repeat(100) }],
    };
    const bodyBytes = Buffer.byteLength(JSON.stringify(body));
    for (let i = 0; i < 10; i++) {
      // Every event after the first waits long enough that the client has left before the usage chunk.
      oa.slowStreamNext({ chunkDelayMs: 5_000 });
      const started = oa.nextStream();
      const stream = await client().chat.completions.create(body);
      for await (const chunk of stream) {
        assert.ok(chunk.choices.length > 0);
        break; // the agent's turn is interrupted after its first chunk
      }
      const record = await started;
      await record.ended;
      await svc.waitForLog(() => usageLines('aborted').length > i);
    }
    const aborted = usageLines('aborted').slice(-10);
    for (const line of aborted) {
      const u = line.usage as { inputTokens: number; outputTokens: number; totalTokens: number; estimated?: boolean };
      assert.equal(u.estimated, true);
      assert.equal(u.inputTokens, Math.ceil(bodyBytes / 3));
      assert.equal(u.totalTokens, u.inputTokens + u.outputTokens);
    }
    const total = aborted.reduce((sum, l) => sum + (l.usage as { totalTokens: number }).totalTokens, 0);
    assert.ok(total >= 10 * Math.ceil(bodyBytes / 3));
    assert.equal(await used(limit.id), total);
    const summary = await usageOnce('oa/plain', (t) => t.requests >= 10);
    assert.equal(summary.totalTokens, total);
    assert.equal(summary.failedRequests, 10);
    assert.equal(summary.estimatedUsageRequests, 10);
    await ok('DELETE', `/v1/limits/${limit.id}`);
  });
});
