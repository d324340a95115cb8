import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createRegistry } from '../../metrics/registry.ts';
import { familyOf, createTrafficMetrics } from '../../metrics/traffic.ts';
import type { UsageEvent } from '../../protocol/gateway.ts';
import { parseExposition, sumOf, sampleValue } from '../helpers/prometheus.ts';

test('families come from the route table, never the raw path', () => {
  assert.equal(familyOf('POST /v1/chat/completions'), 'styleA.chat_completions');
  assert.equal(familyOf('GET /v1/responses/:id'), 'styleA.responses');
  assert.equal(familyOf('POST /v1/messages/count_tokens'), 'styleB.messages');
  assert.equal(familyOf('GET /v1/gauge/readings'), 'gauge');
  assert.equal(familyOf('DELETE /v1/providers/:id'), 'providers');
  assert.equal(familyOf('GET /metrics'), 'process');
  assert.equal(familyOf('unmatched'), 'unmatched');
  assert.equal(familyOf('preflight'), 'preflight');
});

test('answers count by family, method and status class; an unknown method is `other`', () => {
  const registry = createRegistry();
  const { observer } = createTrafficMetrics(registry);
  observer.answered('POST /v1/chat/completions', 'POST', 200, 12);
  observer.answered('POST /v1/chat/completions', 'POST', 201, 3000);
  observer.answered('POST /v1/chat/completions', 'POST', 429, 1);
  observer.failed('POST /v1/chat/completions', 'UPSTREAM_RATE_LIMITED');
  observer.answered('unmatched', 'BREW', 404, 0.2);
  observer.failed('unmatched', 'NOT_FOUND');
  observer.answered('unmatched', 'GET', 999, 0.2);
  const f = parseExposition(registry.render());
  const req = (labels: Record<string, string>) => sampleValue(f, 'switchyard_http_requests_total', labels);
  assert.equal(req({ family: 'styleA.chat_completions', method: 'POST', status_class: '2xx' }), 2);
  assert.equal(req({ family: 'styleA.chat_completions', method: 'POST', status_class: '4xx' }), 1);
  assert.equal(req({ family: 'unmatched', method: 'other', status_class: '4xx' }), 1);
  assert.equal(req({ family: 'unmatched', method: 'GET', status_class: '5xx' }), 1);
  assert.equal(
    sampleValue(f, 'switchyard_http_errors_total', {
      family: 'styleA.chat_completions',
      code: 'UPSTREAM_RATE_LIMITED',
    }),
    1,
  );
  assert.equal(sampleValue(f, 'switchyard_http_errors_total', { family: 'unmatched', code: 'NOT_FOUND' }), 1);
  const chat = { family: 'styleA.chat_completions' };
  assert.equal(sampleValue(f, 'switchyard_http_request_duration_seconds_count', chat), 3);
  assert.equal(sampleValue(f, 'switchyard_http_request_duration_seconds_bucket', { ...chat, le: '0.001' }), 1);
  assert.equal(sampleValue(f, 'switchyard_http_request_duration_seconds_bucket', { ...chat, le: '2.5' }), 2);
  assert.equal(sampleValue(f, 'switchyard_http_request_duration_seconds_bucket', { ...chat, le: '5' }), 3);
});

const event = (providerId: string, outcome: UsageEvent['outcome'], usage: UsageEvent['usage']): UsageEvent => ({
  kind: 'usage',
  requestId: 'req_x',
  at: 0,
  tokenId: 'tok_x',
  providerId,
  modelId: `${providerId}/m`,
  op: 'chat.completions',
  outcome,
  usage,
});

test('usage events add calls by outcome and tokens by kind, per provider; missing counts add nothing', () => {
  const registry = createRegistry();
  const { usage } = createTrafficMetrics(registry);
  const u = {
    inputTokens: 31,
    outputTokens: 17,
    cachedInputTokens: 8,
    reasoningTokens: 5,
    totalTokens: 48,
    costUsd: null,
    toolCalls: {},
  };
  usage(event('openai', 'ok', u));
  usage(event('openai', 'ok', { ...u, reasoningTokens: null }));
  usage(event('openai', 'failed', null));
  usage(event('local', 'aborted', { ...u, inputTokens: Number.NaN }));
  const f = parseExposition(registry.render());
  assert.equal(sampleValue(f, 'switchyard_gateway_calls_total', { provider: 'openai', outcome: 'ok' }), 2);
  assert.equal(sampleValue(f, 'switchyard_gateway_calls_total', { provider: 'openai', outcome: 'failed' }), 1);
  assert.equal(sampleValue(f, 'switchyard_tokens_total', { provider: 'openai', kind: 'input' }), 62);
  assert.equal(sampleValue(f, 'switchyard_tokens_total', { provider: 'openai', kind: 'reasoning' }), 5);
  assert.equal(sampleValue(f, 'switchyard_tokens_total', { provider: 'local', kind: 'input' }), 0);
  assert.equal(sumOf(f, 'switchyard_tokens_total', { provider: 'local' }), 17 + 8 + 5);
});
