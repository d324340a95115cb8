import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planSpans } from '../../../control/traces/gen-ai.ts';
import type { Catalog, CatalogModel, ProviderRecord } from '../../../protocol/catalog.ts';
import type { UsageEvent } from '../../../protocol/gateway.ts';
import type { ProviderKind } from '../../../protocol/providers.ts';

// The span plan of a usage event, where the end-to-end suite (test/integration/traces.suite.ts) has no fake for the
// case: the embedded runtime, a provider's default address, a deleted provider, calls by response ID, an abort.

const provider = (id: string, kind: ProviderKind, baseUrl: string | null) => ({ id, kind, baseUrl }) as ProviderRecord;
const PROVIDERS = [provider('emb', 'embedded', null), provider('oai', 'openai', null)];
const catalog = {
  provider: (id: string) => PROVIDERS.find((p) => p.id === id),
  get: (id: string) =>
    id === 'emb/qwen3.gguf' ? ({ id, providerId: 'emb', upstreamModelId: 'qwen3.gguf' } as CatalogModel) : undefined,
} as unknown as Catalog;

const event = (over: Partial<UsageEvent>): UsageEvent => ({
  kind: 'usage',
  requestId: 'req_1',
  at: 2000,
  startedAt: 1000,
  tokenId: 't',
  providerId: 'oai',
  modelId: 'oai/gpt-5',
  op: 'chat.completions',
  outcome: 'ok',
  usage: null,
  ...over,
});

test('the embedded runtime runs in the process: INTERNAL, no server address', () => {
  const plan = planSpans(event({ providerId: 'emb', modelId: 'emb/qwen3.gguf', op: 'messages' }), catalog);
  assert.deepEqual([plan.name, plan.kind, plan.startTime, plan.endTime], ['chat qwen3.gguf', 'internal', 1000, 2000]);
  assert.equal(plan.attributes['gen_ai.provider.name'], 'embedded');
  assert.equal(plan.attributes['server.address'], undefined);
});

test('a provider without a base URL is at its kind default; a model not in the catalog keeps its upstream name', () => {
  const plan = planSpans(event({}), catalog);
  assert.deepEqual(
    [plan.attributes['server.address'], plan.attributes['server.port'], plan.attributes['gen_ai.request.model']],
    ['api.openai.com', 443, 'gpt-5'],
  );
});

test('a deleted provider is named by its ID; a call by response ID has no model; an abort is an error', () => {
  const plan = planSpans(
    event({ providerId: 'gone', modelId: null, op: 'responses.get', outcome: 'aborted', startedAt: undefined }),
    catalog,
  );
  assert.deepEqual(plan.attributes, {
    'gen_ai.operation.name': 'responses.get',
    'gen_ai.provider.name': 'gone',
    'switchyard.provider.id': 'gone',
    'error.type': 'aborted',
    'switchyard.request.id': 'req_1',
    'switchyard.outcome': 'aborted',
  });
  assert.deepEqual([plan.name, plan.error, plan.startTime], ['responses.get', 'aborted', 2000]);
});
