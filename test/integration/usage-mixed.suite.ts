import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ModelPricing } from '../../protocol/http/catalog.ts';
import { estimateCostUsd } from '../../protocol/pricing.ts';
import * as anthropicFake from '../fakes/anthropic.ts';
import type { RecordedRequest } from '../fakes/http.ts';
import * as openaiFake from '../fakes/openai.ts';
import type { FakeUsage } from '../fakes/script.ts';
import { prng } from '../helpers/prng.ts';
import type { Reply } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// W2.5: usage is exact over a mixed workload. One seeded run of 24 calls through both client protocols, native
// and translated, streamed and not, to three upstreams (OpenAI, Anthropic with cache writes split between the
// 5-minute and 1-hour caches, OpenRouter reporting `usage.cost`), each answering with its own drawn usage.
// The meter's totals, overall and per provider, must equal the sum of what the fakes reported, counter for
// counter, and the estimate must be protocol/pricing.ts over those same figures.

const SEED = 0x5eed_2025;
const CALLS = 24;

type ProviderId = 'openai' | 'anthropic' | 'openrouter';
type Client = 'chat' | 'messages' | 'responses';

const MODELS: Record<ProviderId, { upstream: string; families: string[]; pricing: Omit<ModelPricing, 'currency'> }> = {
  openai: {
    upstream: 'gpt-test',
    families: ['styleA.chat_completions', 'styleA.responses'],
    pricing: {
      inputPerMTok: 2,
      cachedInputPerMTok: 0.5,
      cacheWritePerMTok: null,
      cacheWrite1hPerMTok: null,
      outputPerMTok: 8,
    },
  },
  anthropic: {
    upstream: 'claude-test',
    families: ['styleB.messages'],
    pricing: {
      inputPerMTok: 3,
      cachedInputPerMTok: 0.3,
      cacheWritePerMTok: 3.75,
      cacheWrite1hPerMTok: 6,
      outputPerMTok: 15,
    },
  },
  // Chat only: /v1/responses reaches it over chat completions.
  openrouter: {
    upstream: 'or-chat',
    families: ['styleA.chat_completions'],
    pricing: {
      inputPerMTok: 1,
      cachedInputPerMTok: 0.25,
      cacheWritePerMTok: null,
      cacheWrite1hPerMTok: null,
      outputPerMTok: 4,
    },
  },
};

/** Every client protocol against every upstream protocol it can reach: native, translated, over chat. */
const KINDS: [Client, ProviderId, string][] = [
  ['chat', 'openai', '/v1/chat/completions'],
  ['chat', 'openrouter', '/api/v1/chat/completions'],
  ['chat', 'anthropic', '/v1/messages'],
  ['messages', 'anthropic', '/v1/messages'],
  ['messages', 'openai', '/v1/chat/completions'],
  ['messages', 'openrouter', '/api/v1/chat/completions'],
  ['responses', 'openai', '/v1/responses'],
  ['responses', 'openrouter', '/api/v1/chat/completions'],
];

const COUNTERS = [
  'requests',
  'inputTokens',
  'outputTokens',
  'cachedInputTokens',
  'cacheWriteTokens',
  'cacheWrite1hTokens',
  'reasoningTokens',
  'totalTokens',
  'providerReportedCostUsd',
] as const;
type Counters = Record<(typeof COUNTERS)[number], number | null> & { estimatedCostUsd: number | null };

let svc: InProcessService;
let fakes: Record<ProviderId, openaiFake.OpenAIFake | anthropicFake.AnthropicFake>;
/** The usage each call's fake answered with: set just before the call, which the fake then served alone. */
const reported: { provider: ProviderId; usage: FakeUsage }[] = [];
const replies: Reply[] = [];

/** A usage draw: every part of the prompt and output is non-zero, so a counter dropped or doubled shows. */
function drawUsage(rng: () => number): FakeUsage {
  const int = (lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));
  const inputTokens = int(200, 4000);
  const outputTokens = int(20, 900);
  const cacheCreationTokens = int(1, 600);
  return {
    inputTokens,
    outputTokens,
    cachedTokens: int(1, inputTokens - 1),
    reasoningTokens: int(1, outputTokens - 1),
    cacheCreationTokens,
    cacheCreation1hTokens: int(1, cacheCreationTokens - 1) * (rng() < 0.75 ? 1 : 0),
    // Multiples of 1/1024 add up exactly in binary, so the reported total can be compared exactly.
    costUsd: int(1, 64) / 1024,
  };
}

function body(client: Client, provider: ProviderId, stream: boolean, rng: () => number): Record<string, unknown> {
  const model = `${provider}/${MODELS[provider].upstream}`;
  const streamed = stream ? { stream: true } : {};
  if (client === 'chat') {
    // A client asking for the usage chunk and one not asking must be metered alike.
    const usageChunk = stream && rng() < 0.5 ? { stream_options: { include_usage: true } } : {};
    return { model, messages: [{ role: 'user', content: 'hi' }], ...streamed, ...usageChunk };
  }
  if (client === 'messages') return { model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], ...streamed };
  return { model, input: 'hi', ...streamed };
}

/** A call's upstream usage `u` as the meter must count it for that upstream's protocol. */
function metered(provider: ProviderId, u: FakeUsage): Counters {
  const styleB = provider === 'anthropic';
  const inputTokens = styleB ? u.inputTokens + u.cacheCreationTokens + u.cachedTokens : u.inputTokens;
  const tokens = {
    inputTokens,
    outputTokens: u.outputTokens,
    cachedInputTokens: u.cachedTokens,
    cacheWriteTokens: styleB ? u.cacheCreationTokens : 0,
    cacheWrite1hTokens: styleB ? (u.cacheCreation1hTokens ?? 0) : 0,
  };
  return {
    requests: 1,
    ...tokens,
    // The fake's Messages usage carries no thinking count: styleB reports reasoning inside output only.
    reasoningTokens: styleB ? 0 : u.reasoningTokens,
    totalTokens: inputTokens + u.outputTokens,
    providerReportedCostUsd: provider === 'openrouter' ? u.costUsd : null,
    estimatedCostUsd: estimateCostUsd(tokens, { ...MODELS[provider].pricing, currency: 'USD' }),
  };
}

function sum(rows: Counters[]): Counters {
  const add = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : a + b);
  const total = Object.fromEntries([...COUNTERS, 'estimatedCostUsd'].map((k) => [k, null])) as Counters;
  for (const row of rows) for (const k of [...COUNTERS, 'estimatedCostUsd'] as const) total[k] = add(total[k], row[k]);
  for (const k of [
    'requests',
    'inputTokens',
    'outputTokens',
    'cachedInputTokens',
    'cacheWriteTokens',
    'cacheWrite1hTokens',
    'reasoningTokens',
    'totalTokens',
  ] as const)
    total[k] ??= 0;
  return total;
}

function assertCounters(actual: Record<string, unknown>, want: Counters, what: string): void {
  assert.deepEqual(
    Object.fromEntries(COUNTERS.map((k) => [k, actual[k]])),
    Object.fromEntries(COUNTERS.map((k) => [k, want[k]])),
    what,
  );
  // Estimates are sums of products of decimal prices: equal up to the last bits of a double.
  const estimate = actual.estimatedCostUsd as number;
  assert.ok(
    typeof estimate === 'number' && Math.abs(estimate - want.estimatedCostUsd!) < 1e-12,
    `${what}: estimatedCostUsd ${estimate} != ${want.estimatedCostUsd}`,
  );
}

interface Seen {
  input: number;
  output: number;
  cached: number | null;
  reasoning: number | null;
  /** styleB clients only: the other protocols have no such field. */
  cacheWrite: number | null;
}

const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);
const obj = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};

/** The SSE `data:` payloads of a stream, parsed. */
const events = (text: string): Record<string, unknown>[] =>
  text
    .split('\n')
    .filter((l) => l.startsWith('data: {'))
    .map((l) => JSON.parse(l.slice(6)));

/**
 * The usage the client was shown, in its own protocol, normalised like the meter's counters; null when the
 * answer carries none (a chat stream that did not ask). A styleB stream's usage is message_start's, then each
 * message_delta's figures replacing it field by field, as the SDKs merge them.
 */
function seenByClient(client: Client, stream: boolean, reply: Reply): Seen | null {
  if (client === 'chat') {
    const u = stream
      ? events(reply.text).find((c) => c.usage !== undefined && c.usage !== null)?.usage
      : reply.json.usage;
    if (u === undefined) return null;
    const c = obj(u);
    return {
      input: num(c.prompt_tokens)!,
      output: num(c.completion_tokens)!,
      cached: num(obj(c.prompt_tokens_details).cached_tokens),
      reasoning: num(obj(c.completion_tokens_details).reasoning_tokens),
      cacheWrite: null,
    };
  }
  if (client === 'responses') {
    const u = obj(
      stream ? obj(events(reply.text).find((e) => e.type === 'response.completed')?.response).usage : reply.json.usage,
    );
    return {
      input: num(u.input_tokens)!,
      output: num(u.output_tokens)!,
      cached: num(obj(u.input_tokens_details).cached_tokens),
      reasoning: num(obj(u.output_tokens_details).reasoning_tokens),
      cacheWrite: null,
    };
  }
  let u: Record<string, unknown> = {};
  if (!stream) u = obj(reply.json.usage);
  else {
    for (const e of events(reply.text)) {
      const part =
        e.type === 'message_start' ? obj(obj(e.message).usage) : e.type === 'message_delta' ? obj(e.usage) : {};
      u = { ...u, ...Object.fromEntries(Object.entries(part).filter(([, v]) => v !== null)) };
    }
  }
  const write = num(u.cache_creation_input_tokens) ?? 0;
  const read = num(u.cache_read_input_tokens) ?? 0;
  return {
    input: num(u.input_tokens)! + write + read,
    output: num(u.output_tokens)!,
    cached: read,
    reasoning: num(obj(u.output_tokens_details).thinking_tokens),
    cacheWrite: write,
  };
}

/** What the client must be shown of the upstream's usage, whatever protocol it speaks. */
function shown(client: Client, provider: ProviderId, u: FakeUsage): Seen {
  const m = metered(provider, u);
  return {
    input: m.inputTokens!,
    output: m.outputTokens!,
    cached: m.cachedInputTokens,
    reasoning: provider === 'anthropic' ? null : m.reasoningTokens,
    cacheWrite: client === 'messages' ? m.cacheWriteTokens : null,
  };
}

/** How many chunks of a chat completion stream carry a usage object (not `"usage": null`). */
function usageChunks(text: string): number {
  return events(text).filter((c) => c.usage !== undefined && c.usage !== null).length;
}

async function call(method: string, path: string, json?: unknown): Promise<Reply> {
  const reply = await svc.request(method, path, {
    ...(json !== undefined && { body: json }),
    headers: { 'anthropic-version': '2023-06-01' },
  });
  replies.push(reply);
  assert.ok(reply.status < 300, `${method} ${path} ${JSON.stringify(json)}: ${reply.status} ${reply.text}`);
  return reply;
}

before(async () => {
  const [oa, an, or] = await Promise.all([
    openaiFake.start(),
    anthropicFake.start(),
    openaiFake.start({ flavour: 'openrouter' }),
  ]);
  fakes = { openai: oa, anthropic: an, openrouter: or };
  for (const fake of Object.values(fakes)) fake.setOutput({ toolCalls: 'none', chunks: 3 });
  svc = await startInProcess();
  for (const id of Object.keys(MODELS) as ProviderId[]) {
    const { upstream, families, pricing } = MODELS[id];
    await call('POST', '/v1/providers', {
      kind: id,
      baseUrl: fakes[id].baseUrl,
      credential: `fake-${id}-${process.pid}`,
    });
    await call('POST', '/v1/catalog/models', { providerId: id, upstreamModelId: upstream, families, pricing });
  }

  const rng = prng(SEED);
  const ids: string[] = [];
  for (let i = 0; i < CALLS; i++) {
    const [client, provider, upstreamPath] = KINDS[i % KINDS.length]!;
    // Each kind once whole, once streamed, then as the seed says.
    const stream = i < KINDS.length ? false : i < 2 * KINDS.length ? true : rng() < 0.5;
    const fake = fakes[provider];
    const usage = drawUsage(rng);
    fake.setUsage(usage);
    const earlier = fake.requests.length;
    const request = body(client, provider, stream, rng);
    const reply = await call('POST', `/v1/${client === 'chat' ? 'chat/completions' : client}`, request);
    ids.push(reply.headers['x-service-request-id']!);
    // The service may list the provider's models in the background meanwhile: only calls count.
    const sent: RecordedRequest[] = fake.requests.slice(earlier).filter((r) => r.method === 'POST');
    assert.deepEqual(
      sent.map((r) => r.path),
      [upstreamPath],
      `call ${i}: one upstream exchange`,
    );
    assert.equal(
      (sent[0]!.json as { stream?: boolean }).stream === true,
      stream,
      `call ${i}: streamed upstream as asked`,
    );
    // OpenRouter always ends a stream with its usage, and documents the option as having no effect.
    if (stream && upstreamPath.endsWith('/chat/completions') && provider !== 'openrouter') {
      assert.deepEqual(
        (sent[0]!.json as { stream_options?: unknown }).stream_options,
        { include_usage: true },
        `call ${i}: usage asked upstream`,
      );
    }
    if (client === 'chat' && stream) {
      // The service removes only the chunk it had asked for; OpenRouter's own is relayed as it came.
      const expected = request.stream_options !== undefined || provider === 'openrouter' ? 1 : 0;
      assert.equal(
        usageChunks(reply.text),
        expected,
        `call ${i}: the usage chunk reaches the client only when it asked`,
      );
    }
    const visible = seenByClient(client, stream, reply);
    if (visible !== null)
      assert.deepEqual(visible, shown(client, provider, usage), `call ${i}: usage shown to the client`);
    reported.push({ provider, usage });
  }
  // Usage reaches the meter after the call's usage log line; the meter then commits within 255 ms.
  for (const reqId of ids) await svc.waitForLog((l) => l.msg === 'usage' && l.reqId === reqId);
  const deadline = Date.now() + 10_000;
  while ((await call('GET', '/v1/usage/summary')).json.totals.requests < CALLS && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 25));
});
after(async () => {
  await svc?.stop();
  await Promise.all(Object.values(fakes ?? {}).map((f) => f.close()));
});

describe('usage over a mixed workload', () => {
  test('the seeded workload exercises every counter and both cache lifetimes', () => {
    assert.equal(reported.length, CALLS);
    const all = sum(reported.map((r) => metered(r.provider, r.usage)));
    for (const k of COUNTERS) assert.ok((all[k] ?? 0) > 0, k);
    assert.ok(
      reported.some((r) => r.provider === 'anthropic' && (r.usage.cacheCreation1hTokens ?? 0) > 0),
      'some 1-hour cache writes',
    );
    assert.ok(
      reported.some((r) => r.provider === 'anthropic' && r.usage.cacheCreation1hTokens === 0),
      'some 5-minute-only cache writes',
    );
  });

  test('summary totals equal the sum of what the fakes reported, per counter', async () => {
    const totals = (await call('GET', '/v1/usage/summary')).json.totals;
    assertCounters(totals, sum(reported.map((r) => metered(r.provider, r.usage))), 'totals');
  });

  test('the breakdown by provider does too, provider by provider', async () => {
    const rows = (await call('GET', '/v1/usage/breakdown?groupBy=provider')).json.data as Record<string, unknown>[];
    assert.deepEqual(rows.map((r) => r.providerId).sort(), ['anthropic', 'openai', 'openrouter']);
    for (const row of rows) {
      const provider = row.providerId as ProviderId;
      assertCounters(
        row,
        sum(reported.filter((r) => r.provider === provider).map((r) => metered(provider, r.usage))),
        provider,
      );
    }
  });

  test('a budget over the same calls counts the same spend, estimated and reported', async () => {
    const all = sum(reported.map((r) => metered(r.provider, r.usage)));
    const budget = (
      await call('POST', '/v1/gauge/budgets', { name: 'mixed', amount: 1000, period: 'day', basis: 'estimated' })
    ).json;
    assert.equal(budget.spend.providerReported, all.providerReportedCostUsd);
    assert.ok(
      Math.abs(budget.spend.estimated - all.estimatedCostUsd!) < 1e-12,
      `${budget.spend.estimated} != ${all.estimatedCostUsd}`,
    );
  });

  test('nothing answered 5xx', () => {
    assert.deepEqual(
      replies.filter((r) => r.status >= 500).map((r) => r.text),
      [],
    );
  });
});
