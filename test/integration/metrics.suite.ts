import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import * as openaiFake from '../fakes/openai.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';
import { parseExposition, sumOf, sampleValue, type Family } from '../helpers/prometheus.ts';

// GET /metrics over real traffic: chat calls relayed to a fake OpenAI (one of them refused with a 429), then
// the whole exposition parsed strictly and its counters compared with the calls made, exactly.

const KEY = `fake-openai-metrics-${process.pid}`;
const PROMPT = `metrics-prompt-${process.pid}-never-exposed`;
const ANSWER = `metrics-answer-${process.pid}-never-exposed`;
const CHAT = 'styleA.chat_completions';
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let scraped: { text: string; families: Map<string, Family>; contentType: string };

const chat = (stream: boolean) => ({
  model: 'openai/gpt-test',
  messages: [{ role: 'user', content: PROMPT }],
  ...(stream && { stream: true, stream_options: { include_usage: true } }),
});

async function scrape(token?: string) {
  const reply = await svc.request('GET', '/metrics', token === undefined ? {} : { token });
  assert.equal(reply.status, 200, reply.text);
  return { text: reply.text, families: parseExposition(reply.text), contentType: reply.headers['content-type'] ?? '' };
}

before(async () => {
  oa = await openaiFake.start({ apiKey: KEY });
  oa.setModels([{ id: 'gpt-test' }]);
  oa.setOutput({ text: ANSWER });
  svc = await startInProcess();
  assert.equal(
    (await svc.request('POST', '/v1/providers', { body: { kind: 'openai', baseUrl: oa.baseUrl, credential: KEY } }))
      .status,
    201,
  );
  assert.equal((await svc.request('POST', '/v1/providers/openai/actions/refresh-models')).status, 200);
  // Three good calls (one streamed) and one the upstream refuses with a 429.
  const ids: string[] = [];
  for (const stream of [false, true, false]) {
    const reply = await svc.request('POST', '/v1/chat/completions', { body: chat(stream) });
    assert.equal(reply.status, 200, reply.text);
    ids.push(reply.headers['x-service-request-id']!);
  }
  oa.failNext(429, { error: { message: 'slow down', type: 'rate_limit_error' } });
  const refused = await svc.request('POST', '/v1/chat/completions', { body: chat(false) });
  assert.equal(refused.status, 429, refused.text);
  ids.push(refused.headers['x-service-request-id']!);
  // Usage is counted once each call is over, after its answer, in the same task as its usage log line.
  for (const reqId of ids) await svc.waitForLog((l) => l.msg === 'usage' && l.reqId === reqId);
  scraped = await scrape();
});
after(async () => {
  await svc.stop();
  await oa.close();
});

test('is the text format 0.0.4, parsed whole by a strict reader', () => {
  assert.equal(scraped.contentType, 'text/plain; version=0.0.4; charset=utf-8');
  for (const [name, family] of scraped.families) {
    assert.match(name, /^switchyard_/);
    assert.ok(family.help !== null && family.type !== 'untyped', name);
  }
  assert.equal(sampleValue(scraped.families, 'switchyard_info', { version: pkg.version }), 1);
});

test('request, error and duration counts match the calls made', () => {
  const f = scraped.families;
  const chatAnswers = (status_class: string) =>
    sampleValue(f, 'switchyard_http_requests_total', { family: CHAT, method: 'POST', status_class });
  assert.equal(chatAnswers('2xx'), 3);
  assert.equal(chatAnswers('4xx'), 1);
  assert.equal(sumOf(f, 'switchyard_http_requests_total', { family: CHAT }), 4);
  assert.equal(sampleValue(f, 'switchyard_http_errors_total', { family: CHAT, code: 'UPSTREAM_RATE_LIMITED' }), 1);
  assert.equal(sumOf(f, 'switchyard_http_errors_total'), 1);
  assert.equal(sampleValue(f, 'switchyard_http_request_duration_seconds_count', { family: CHAT }), 4);
  assert.equal(sampleValue(f, 'switchyard_http_request_duration_seconds_bucket', { family: CHAT, le: '+Inf' }), 4);
  // The provider's creation and its model refresh, both answered 2xx.
  assert.equal(
    sampleValue(f, 'switchyard_http_requests_total', { family: 'providers', method: 'POST', status_class: '2xx' }),
    2,
  );
});

test('gateway calls, tokens and upstream timings are per provider', () => {
  const f = scraped.families;
  assert.equal(sampleValue(f, 'switchyard_gateway_calls_total', { provider: 'openai', outcome: 'ok' }), 3);
  assert.equal(sampleValue(f, 'switchyard_gateway_calls_total', { provider: 'openai', outcome: 'failed' }), 1);
  // The fake's usage per call: 31 in (8 cached), 17 out (5 reasoning).
  const tokens = (kind: string) => sampleValue(f, 'switchyard_tokens_total', { provider: 'openai', kind });
  assert.deepEqual(['input', 'output', 'cached_input', 'reasoning'].map(tokens), [3 * 31, 3 * 17, 3 * 8, 3 * 5]);
  assert.equal(sampleValue(f, 'switchyard_upstream_duration_seconds_count', { provider: 'openai' }), 4);
  assert.equal(sampleValue(f, 'switchyard_upstream_ttfb_seconds_count', { provider: 'openai' }), 3);
  assert.equal(
    sampleValue(f, 'switchyard_upstream_errors_total', { provider: 'openai', code: 'UPSTREAM_RATE_LIMITED' }),
    1,
  );
  assert.equal(sampleValue(f, 'switchyard_relay_inflight_calls', { pool: 'relay' }), 0);
});

test('pools, the meter and Gauge sources are read at the scrape', async () => {
  const f = scraped.families;
  assert.ok(sampleValue(f, 'switchyard_process_memory_bytes', { kind: 'rss' }) > 0);
  assert.ok(sampleValue(f, 'switchyard_worker_threads', { pool: 'proxy' }) >= 0);
  assert.equal(sampleValue(f, 'switchyard_worker_queue_depth', { pool: 'proxy' }), 0);
  const sources = (await svc.request('GET', '/v1/gauge/sources')).json.data as unknown[];
  assert.ok(sources.length > 0);
  assert.equal(sumOf(f, 'switchyard_gauge_sources'), sources.length);
  assert.equal(sumOf(f, 'switchyard_gauge_sources', { last_outcome: 'never' }), sources.length);
});

test('holds no token, credential, prompt, answer or path', () => {
  for (const needle of [svc.adminToken, KEY, PROMPT, ANSWER, svc.home, 'cred_', 'gpt-test', oa.baseUrl]) {
    assert.ok(!scraped.text.includes(needle), needle);
  }
});

test('needs a read token; refuses a query; bounds what a hostile path or method adds', async () => {
  const anonymous = await svc.request('GET', '/metrics', { token: null });
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.json.error.code, 'UNAUTHORIZED');
  const tokens: Record<string, string> = {};
  for (const scope of ['inference', 'read'] as const) {
    const created = await svc.request('POST', '/v1/tokens', { body: { name: `metrics-${scope}`, scopes: [scope] } });
    svc.markSecretBearing(created);
    tokens[scope] = created.json.secret;
  }
  const inference = await svc.request('GET', '/metrics', { token: tokens.inference! });
  assert.equal(inference.status, 403);
  assert.equal(inference.json.error.code, 'FORBIDDEN');
  const query = await svc.request('GET', '/metrics?format=json');
  assert.equal(query.status, 400);
  assert.equal(query.json.error.code, 'INVALID_REQUEST');
  assert.equal(query.json.error.param, 'format');
  const hostile = await svc.request('GET', '/zz-hostile-%22%5C%0A-path');
  assert.equal(hostile.status, 404);
  const after = await scrape(tokens.read!);
  const f = after.families;
  assert.equal(
    sampleValue(f, 'switchyard_http_requests_total', { family: 'process', method: 'GET', status_class: '4xx' }),
    3,
  );
  for (const code of ['UNAUTHORIZED', 'FORBIDDEN', 'INVALID_REQUEST'])
    assert.equal(sampleValue(f, 'switchyard_http_errors_total', { family: 'process', code }), 1, code);
  assert.equal(sampleValue(f, 'switchyard_http_errors_total', { family: 'unmatched', code: 'NOT_FOUND' }), 1);
  // The first scrape, answered 200, is counted; this one is not yet.
  assert.equal(
    sampleValue(f, 'switchyard_http_requests_total', { family: 'process', method: 'GET', status_class: '2xx' }),
    1,
  );
  assert.ok(!after.text.includes('hostile'));
  for (const secret of Object.values(tokens)) assert.ok(!after.text.includes(secret));
});
