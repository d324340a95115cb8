import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { UsageEvent } from '../../protocol/gateway.ts';
import { packRecord, RECORD_SLOTS, unpackRecord } from '../../protocol/meter.ts';
import { report, usageEvent } from '../helpers/usage.ts';

// Meter records cross to the worker as a flat array (MeterBatch): what goes in must come out, minus the
// request ID and anything else that is not counted.

const withoutEventFields = ({ kind: _kind, requestId: _requestId, ...rec }: UsageEvent) => ({
  ...rec,
  estimatedCostUsd: null,
  pricingSource: null,
});

describe('packRecord / unpackRecord', () => {
  const events: UsageEvent[] = [
    usageEvent(),
    usageEvent({ usage: null, outcome: 'aborted', modelId: null }),
    usageEvent({ usage: report({ toolCalls: { get_weather: 2, get_time: 1 } }), op: 'messages' }),
    usageEvent({ route: { packSlug: 'fast', routeId: 'r1', fallback: true, fallbackReason: 'rate_limited' } }),
    usageEvent({
      acceleration: {
        mode: 'draft',
        draftModelId: 'local/tiny',
        generationMs: 120,
        draftTokens: 40,
        acceptedDraftTokens: 31,
      },
    }),
    usageEvent({ acceleration: { mode: 'none', draftModelId: null, generationMs: 80 } }),
    usageEvent({ credentialId: 'cred_01JABCDEFGHJKMNPQRSTVWXYZ0' }),
  ];

  it('round-trips every countable field, several records in one array', () => {
    const fields: unknown[] = [];
    for (const e of events) packRecord(fields, e);
    assert.equal(fields.length, events.length * RECORD_SLOTS);
    const back = events.map((_, i) => unpackRecord(fields, i * RECORD_SLOTS));
    assert.deepEqual(back, events.map(withoutEventFields));
  });

  it('carries the cache-write count and the estimate fixed on the edge, with what priced it', () => {
    const fields: unknown[] = [];
    packRecord(fields, usageEvent({ usage: report({ cacheWriteTokens: 3 }), op: 'messages' }), 0.0042, 'catalog');
    packRecord(fields, usageEvent({ usage: null }), 0.5, 'genai-prices@0.1.8');
    packRecord(fields, usageEvent());
    const [a, b, c] = [0, 1, 2].map((i) => unpackRecord(fields, i * RECORD_SLOTS));
    assert.deepEqual([a!.usage?.cacheWriteTokens, a!.estimatedCostUsd, a!.pricingSource], [3, 0.0042, 'catalog']);
    assert.deepEqual([b!.usage, b!.estimatedCostUsd, b!.pricingSource], [null, 0.5, 'genai-prices@0.1.8']);
    assert.deepEqual([c!.estimatedCostUsd, c!.pricingSource], [null, null]);
  });

  it('carries nothing but primitives for a plain record, and never the request ID', () => {
    const fields: unknown[] = [];
    const e = usageEvent({ requestId: 'req_secret_marker' });
    packRecord(fields, e);
    assert.ok(
      fields.every((f) => f === null || typeof f !== 'object'),
      'no object for a record without tool calls, route or acceleration',
    );
    assert.ok(!JSON.stringify(fields).includes('req_secret_marker'));
  });

  it("keeps its own copies of the nested fields, not the event's objects", () => {
    const e = usageEvent({
      usage: report({ toolCalls: { a: 1 } }),
      route: { packSlug: 'p', routeId: 'r', fallback: false, fallbackReason: null },
    });
    const fields: unknown[] = [];
    packRecord(fields, e);
    e.route!.packSlug = 'changed';
    assert.equal(unpackRecord(fields, 0).route?.packSlug, 'p');
  });
});
