import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import * as otlpFake from '../fakes/otlp.ts';
import type { FakeUsage } from '../fakes/script.ts';
import { addProvider, distinctUsage, requestIds } from '../helpers/gateway.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// OpenTelemetry traces (docs/api.md, Traces) end to end: calls through the official openai and Anthropic clients,
// the spans a fake OTLP/HTTP collector decodes, each attribute against the usage the fake upstream reported.

const KEY = `fake-key-${process.pid}`;
// A backend's API key in a trace header: it must reach the collector and nowhere else.
const HONEYCOMB_KEY = `hcaik_trace_header_secret_${process.pid}`;
const SESSION = 'claude-session-7f3a';
const CLIENT = 3;
const ERROR = 2;

let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let ob: openaiFake.OpenAIFake;
let an: anthropicFake.AnthropicFake;
let otlp: otlpFake.OtlpFake;
let openai: OpenAI;
let anthropic: Anthropic;
const ids = requestIds();

const portOf = (baseUrl: string) => Number(new URL(baseUrl).port);
const ofRequest = (reqId: string) => (s: otlpFake.ReceivedSpan) => s.attributes['switchyard.request.id'] === reqId;

/** The spans of one call once `count` of them arrived (the call's root carries the request ID). */
async function spansOf(reqId: string, count = 1, fake = otlp): Promise<otlpFake.ReceivedSpan[]> {
  const all = await fake.waitFor((spans) => {
    const root = spans.find(ofRequest(reqId));
    return root !== undefined && spans.filter((s) => s.traceId === root.traceId).length >= count;
  });
  const root = all.find(ofRequest(reqId))!;
  return all.filter((s) => s.traceId === root.traceId);
}

/** The attributes every openai-provider span of `gpt-test` has. */
function openaiCall(providerId: string, fake: openaiFake.OpenAIFake) {
  return {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'openai',
    'switchyard.provider.id': providerId,
    'gen_ai.request.model': 'gpt-test',
    'gen_ai.response.model': 'gpt-test',
    'switchyard.model.id': `${providerId}/gpt-test`,
    'server.address': '127.0.0.1',
    'server.port': portOf(fake.baseUrl),
  };
}

/** Chat Completions usage: prompt_tokens already counts the cached tokens, as the conventions want. */
const chatUsage = (u: FakeUsage) => ({
  'gen_ai.usage.input_tokens': u.inputTokens,
  'gen_ai.usage.output_tokens': u.outputTokens,
  'gen_ai.usage.cache_read.input_tokens': u.cachedTokens,
  'gen_ai.usage.reasoning.output_tokens': u.reasoningTokens,
});

before(async () => {
  otlp = await otlpFake.start();
  oa = await openaiFake.start({ apiKey: KEY });
  ob = await openaiFake.start({ apiKey: KEY });
  an = await anthropicFake.start({ apiKey: KEY });
  for (const f of [oa, ob]) f.setModels([{ id: 'gpt-test' }]);
  an.setModels([{ id: 'claude-test-1', displayName: 'Claude Test 1' }]);
  // The SDK's batch delay (5 s by default) through its own variable: a test waits on arrivals, not on the clock.
  svc = await startInProcess({ env: { OTEL_BSP_SCHEDULE_DELAY: '10' } });
  await addProvider(svc, { kind: 'openai', baseUrl: oa.baseUrl, credential: KEY });
  await addProvider(svc, { id: 'openai-b', kind: 'openai', baseUrl: ob.baseUrl, credential: KEY });
  await addProvider(svc, { kind: 'anthropic', baseUrl: an.baseUrl, credential: KEY });
  const pack = await svc.request('POST', '/v1/route-packs', {
    body: { slug: 'fb', routes: [{ id: 'a', model: 'openai/gpt-test' }], fallback: { model: 'openai-b/gpt-test' } },
  });
  assert.equal(pack.status, 201, pack.text);
  const on = await svc.request('PATCH', '/v1/settings', {
    body: { traces: { enabled: true, endpoint: otlp.endpoint, headers: { 'x-honeycomb-team': HONEYCOMB_KEY } } },
  });
  assert.equal(on.status, 200, on.text);
  openai = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0, fetch: ids.fetch });
  anthropic = new Anthropic({ baseURL: svc.url, apiKey: svc.adminToken, maxRetries: 0, fetch: ids.fetch });
});
after(async () => {
  await svc?.stop();
  await Promise.all([oa?.close(), ob?.close(), an?.close(), otlp?.close()]);
});

describe('settings', () => {
  test('GET /v1/settings names the trace headers, never their values', async () => {
    const reply = await svc.request('GET', '/v1/settings');
    assert.deepEqual(reply.json.traces, { enabled: true, endpoint: otlp.endpoint, headerNames: ['x-honeycomb-team'] });
    assert.equal(reply.text.includes(HONEYCOMB_KEY), false);
  });

  test('a bad endpoint or a header the exporter owns is refused, and changes nothing', async () => {
    for (const [traces, param] of [
      [{ endpoint: 'ftp://127.0.0.1/v1/traces' }, 'traces.endpoint'],
      [{ endpoint: 'http://user:pw@127.0.0.1/v1/traces' }, 'traces.endpoint'],
      [{ endpoint: 'http://127.0.0.1/v1/traces?key=1' }, 'traces.endpoint'],
      [{ headers: { 'content-type': 'text/plain' } }, 'traces.headers.content-type'],
    ] as const) {
      const reply = await svc.request('PATCH', '/v1/settings', { body: { traces } });
      assert.equal(reply.status, 400, JSON.stringify(traces));
      assert.deepEqual([reply.json.error.code, reply.json.error.param], ['INVALID_REQUEST', param]);
    }
    const header = await svc.request('PATCH', '/v1/settings', { body: { traces: { headers: { 'X-Up': 'a' } } } });
    assert.equal(header.status, 400, 'header names are lower case');
    assert.equal((await svc.request('GET', '/v1/settings')).json.traces.endpoint, otlp.endpoint);
  });
});

describe('one span per call', () => {
  test('chat: the attributes are the fake upstream usage, exactly; the key header reaches the collector', async () => {
    const u = distinctUsage(1);
    oa.setUsage(u);
    const { reqId } = await ids.call(() =>
      openai.chat.completions.create({ model: 'openai/gpt-test', messages: [{ role: 'user', content: 'hi' }] }),
    );
    const [span, ...more] = await spansOf(reqId);
    assert.deepEqual(more, []);
    assert.deepEqual(span!.attributes, {
      ...openaiCall('openai', oa),
      ...chatUsage(u),
      'switchyard.request.id': reqId,
      'switchyard.outcome': 'ok',
    });
    assert.deepEqual([span!.name, span!.kind, span!.parentSpanId, span!.status], ['chat gpt-test', CLIENT, null, 0]);
    assert.ok(span!.startMs <= span!.endMs);
    assert.deepEqual(
      [span!.resource['service.name'], typeof span!.resource['service.version']],
      ['switchyard', 'string'],
    );
    assert.equal(otlp.exports.at(-1)!['x-honeycomb-team'], HONEYCOMB_KEY);
    assert.equal(svc.log().includes(HONEYCOMB_KEY), false, 'the header value is never logged');
  });

  test('chat streamed: the usage of the stream, one span for the whole stream', async () => {
    const u = distinctUsage(2);
    oa.setUsage(u);
    const { reqId } = await ids.call(async () => {
      const stream = await openai.chat.completions.create({
        model: 'openai/gpt-test',
        messages: [{ role: 'user', content: 'stream' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      for await (const _ of stream);
    });
    const spans = await spansOf(reqId);
    assert.equal(spans.length, 1);
    assert.deepEqual(spans[0]!.attributes, {
      ...openaiCall('openai', oa),
      ...chatUsage(u),
      'switchyard.request.id': reqId,
      'switchyard.outcome': 'ok',
    });
  });

  test('messages with a Claude Code session: input counts cache reads and writes, conversation.id', async () => {
    const u = distinctUsage(3);
    an.setUsage(u);
    const { reqId } = await ids.call(() =>
      anthropic.messages.create(
        { model: 'anthropic/claude-test-1', max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] },
        { headers: { 'x-claude-code-session-id': SESSION } },
      ),
    );
    const spans = await spansOf(reqId);
    assert.equal(spans.length, 1);
    assert.deepEqual(spans[0]!.attributes, {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'anthropic',
      'switchyard.provider.id': 'anthropic',
      'gen_ai.request.model': 'claude-test-1',
      'gen_ai.response.model': 'claude-test-1',
      'switchyard.model.id': 'anthropic/claude-test-1',
      'server.address': '127.0.0.1',
      'server.port': portOf(an.baseUrl),
      'gen_ai.conversation.id': SESSION,
      // Anthropic's input_tokens is only what follows the last cache breakpoint.
      'gen_ai.usage.input_tokens': u.inputTokens + u.cacheCreationTokens + u.cachedTokens,
      'gen_ai.usage.output_tokens': u.outputTokens,
      'gen_ai.usage.cache_read.input_tokens': u.cachedTokens,
      'gen_ai.usage.cache_creation.input_tokens': u.cacheCreationTokens,
      'switchyard.request.id': reqId,
      'switchyard.outcome': 'ok',
    });
    assert.equal(spans[0]!.name, 'chat claude-test-1');
  });

  test('a failing call has error.type and an ERROR status, and no response model', async () => {
    oa.failNext(500, { error: { message: 'boom', type: 'server_error' } });
    const { reqId } = await ids.call(() =>
      openai.chat.completions
        .create({ model: 'openai/gpt-test', messages: [{ role: 'user', content: 'fail' }] })
        .catch((err: unknown) => err),
    );
    const [span, ...more] = await spansOf(reqId);
    assert.deepEqual(more, []);
    const { 'gen_ai.response.model': _, ...wanted } = openaiCall('openai', oa);
    assert.deepEqual(span!.attributes, {
      ...wanted,
      'error.type': '_OTHER',
      'switchyard.request.id': reqId,
      'switchyard.outcome': 'failed',
    });
    assert.equal(span!.status, ERROR);
  });
});

describe('route pack fallback', () => {
  test('the call is the parent, with a child per attempt: the failed one, then the one that answered', async () => {
    const u = distinctUsage(4);
    ob.setUsage(u);
    oa.failNext(429, { error: { message: 'slow down', type: 'requests' } }, { 'retry-after': '0' });
    const { reqId } = await ids.call(() =>
      openai.chat.completions.create({ model: '@route/fb', messages: [{ role: 'user', content: 'pack' }] }),
    );
    const spans = await spansOf(reqId, 3);
    assert.equal(spans.length, 3);
    const parent = spans.find((s) => s.parentSpanId === null)!;
    const children = spans.filter((s) => s.parentSpanId === parent.spanId).sort((x, y) => x.startMs - y.startMs);
    assert.equal(children.length, 2);
    assert.equal(parent.name, 'chat @route/fb');
    assert.deepEqual(parent.attributes, {
      ...openaiCall('openai-b', ob),
      'gen_ai.request.model': '@route/fb',
      ...chatUsage(u),
      'switchyard.route.pack': 'fb',
      'switchyard.route.id': '@fallback',
      'switchyard.route.fallback_reason': 'rate_limited',
      'switchyard.request.id': reqId,
      'switchyard.outcome': 'ok',
    });
    const { 'gen_ai.response.model': _, ...failedCall } = openaiCall('openai', oa);
    assert.deepEqual(children[0]!.attributes, {
      ...failedCall,
      'error.type': 'UPSTREAM_RATE_LIMITED',
      'switchyard.route.id': 'a',
    });
    assert.equal(children[0]!.status, ERROR);
    // Usage stays on the parent: a backend summing tokens over spans counts the call once.
    assert.deepEqual(children[1]!.attributes, { ...openaiCall('openai-b', ob), 'switchyard.route.id': '@fallback' });
    assert.deepEqual(
      children.map((c) => c.name),
      ['chat gpt-test', 'chat gpt-test'],
    );
    assert.ok(parent.startMs <= children[0]!.startMs && children[0]!.endMs <= children[1]!.startMs);
    assert.ok(children[1]!.endMs <= parent.endMs);
  });
});

describe('switching', () => {
  test('off: no span is made; on again to another collector: without a restart', async () => {
    const off = await svc.request('PATCH', '/v1/settings', { body: { traces: { enabled: false } } });
    assert.deepEqual(off.json.traces, { enabled: false, endpoint: otlp.endpoint, headerNames: ['x-honeycomb-team'] });
    const quiet = await ids.call(() =>
      openai.chat.completions.create({ model: 'openai/gpt-test', messages: [{ role: 'user', content: 'off' }] }),
    );
    const other = await otlpFake.start();
    try {
      const on = await svc.request('PATCH', '/v1/settings', {
        body: { traces: { enabled: true, endpoint: other.endpoint, headers: { 'x-honeycomb-team': null } } },
      });
      assert.deepEqual(on.json.traces.headerNames, []);
      const marker = await ids.call(() =>
        openai.chat.completions.create({ model: 'openai/gpt-test', messages: [{ role: 'user', content: 'on' }] }),
      );
      await spansOf(marker.reqId, 1, other);
      // The call made while off is in neither collector: the marker after it has arrived.
      for (const fake of [otlp, other]) assert.equal(fake.spans.filter(ofRequest(quiet.reqId)).length, 0);
      assert.equal(other.exports.at(-1)!['x-honeycomb-team'], undefined);
    } finally {
      await svc.request('PATCH', '/v1/settings', { body: { traces: { enabled: false } } });
      await other.close();
    }
  });
});
