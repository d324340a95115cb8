import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { relayMultipart, type MultipartDeps } from '../../../edge/gateway/multipart.ts';
import type { ModelScan } from '../../../edge/http/multipart-model.ts';
import type { RouteContext } from '../../../edge/http/router.ts';
import type { RelayCall } from '../../../edge/gateway/relay-response.ts';
import type { ResolvedModel } from '../../../protocol/catalog.ts';

// The upload pump runs beside the wait for the answer: whatever fails in it (the client's body, the replay
// of what was scanned, removing the spill file) must abort the call, and never reject where nobody listens:
// an unhandled rejection would end the service.

function scanThat(fail: { replay?: boolean; dispose?: boolean }): ModelScan {
  return {
    push: async () => 'm',
    end: async () => 'm',
    async *replay() {
      if (fail.replay) throw new Error('the spill file vanished');
      yield new TextEncoder().encode('model=m');
    },
    modelRange: () => ({ start: 6, end: 7 }),
    bufferedBytes: () => 0,
    dispose: async () => {
      if (fail.dispose) throw new Error('EACCES: the spill file cannot be removed');
    },
  };
}

async function run(fail: { replay?: boolean; dispose?: boolean }) {
  let aborted = 0;
  let ended = 0;
  const call = {
    result: Promise.resolve({ status: 200 }),
    done: Promise.resolve({ outcome: 'ok' }),
    handle: { abort: () => (aborted++, true) },
    upload: { ready: async () => undefined, send: () => undefined, end: () => void ended++ },
  } as unknown as RelayCall;
  const body = (async function* () {
    yield new TextEncoder().encode('model=m');
  })();
  const ctx = {
    req: { headers: { 'content-type': 'multipart/form-data; boundary=x' } },
    bodyStream: body,
  } as unknown as RouteContext<unknown>;
  const deps: MultipartDeps = {
    spillDir: '/nonexistent',
    resolve: () => ({ model: { upstreamModelId: 'up' } }) as unknown as ResolvedModel,
    start: () => call,
    follow: async () => ({ status: 200 }),
    scan: () => scanThat(fail),
  };
  const unhandled: unknown[] = [];
  const listener = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', listener);
  try {
    await relayMultipart(ctx, deps);
    // Two turns for the pump's promise chain (and a rejection's report) to settle.
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  } finally {
    process.off('unhandledRejection', listener);
  }
  return { aborted, ended, unhandled };
}

describe('the multipart upload pump', () => {
  test('a replay that fails aborts the call', async () => {
    const r = await run({ replay: true });
    assert.deepEqual([r.aborted, r.ended, r.unhandled.length], [1, 0, 0]);
  });

  test('a spill file that cannot be removed rejects nowhere', async () => {
    const r = await run({ dispose: true });
    assert.deepEqual([r.aborted, r.ended, r.unhandled.length], [0, 1, 0]);
    const both = await run({ replay: true, dispose: true });
    assert.deepEqual([both.aborted, both.unhandled.length], [1, 0]);
  });
});
