import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { packBatch, unpackBatch } from '../../protocol/relay-batch.ts';
import type { FromWorker, RelayRequest, ToWorker } from '../../protocol/relay.ts';

// A text batch carries its bodies beside the JSON, so they are never escaped; what arrives is what was sent.

const req = (body: RelayRequest['body']) =>
  ({ op: 'chat.completions', requestId: 'req_1', headers: {}, body, bodyStreamed: false }) as unknown as RelayRequest;

describe('packBatch / unpackBatch', () => {
  it(
    'round-trips starts and whole answers with text bodies, quotes and all, and leaves the sent messages as they ' +
      'were',
    () => {
      const quoted = JSON.stringify({
        model: 'm',
        messages: [{ role: 'user', content: `say "hi" \\ and \u00e9\u{1f600} ${'x'.repeat(600)}` }],
      });
      const long = JSON.stringify({ model: 'm', input: 'y'.repeat(600) });
      const starts: ToWorker[] = [
        { t: 'start', id: 1, req: req(quoted) },
        { t: 'start', id: 2, req: req(null) },
        { t: 'abort', id: 3 },
        { t: 'start', id: 4, req: req(long) },
        { t: 'start', id: 5, req: req('{"model":"short"}') },
      ];
      const packed = packBatch(starts);
      assert.ok(typeof packed !== 'string');
      assert.deepEqual(packed.texts, [quoted, long], 'long bodies go aside, a short one stays in the JSON');
      assert.ok(!packed.json.includes('say') && packed.json.includes('short'));
      assert.equal((starts[0] as { req: RelayRequest }).req.body, quoted, 'the edge keeps its request as it was');
      assert.deepEqual(unpackBatch<ToWorker>(structuredClone(packed)), starts);

      const answers: FromWorker[] = [
        {
          t: 'whole',
          id: 1,
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: `{"a":"\\"${'b'.repeat(600)}\\""}`,
          end: { usage: null, responseId: null },
        },
        { t: 'free', slot: 2 },
        { t: 'error', id: 5, error: { code: 'UPSTREAM_ERROR', message: 'x' } as never, usage: null },
      ];
      assert.deepEqual(unpackBatch<FromWorker>(structuredClone(packBatch(answers))), answers);
    },
  );

  it('is plain JSON text when no body is long enough to go aside', () => {
    const batch: ToWorker[] = [
      { t: 'start', id: 1, req: req('{"model":"m"}') },
      { t: 'credit', id: 2, bytes: 10 },
    ];
    const packed = packBatch(batch);
    assert.equal(packed, JSON.stringify(batch));
    assert.deepEqual(unpackBatch<ToWorker>(packed), batch);
  });

  it('puts the bodies back even when the JSON cannot be made', () => {
    const body = JSON.stringify({ model: 'm', input: 'z'.repeat(600) });
    const start = { t: 'start', id: 1, req: req(body) } as ToWorker & { extra?: bigint };
    start.extra = 1n;
    assert.throws(() => packBatch([start]), TypeError);
    assert.equal((start as { req: RelayRequest }).req.body, body);
  });
});
