import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createRegistry } from '../../metrics/registry.ts';
import { createRelayMetrics } from '../../metrics/relay-tap.ts';
import { ServiceError } from '../../protocol/errors.ts';
import type { RelayRequest } from '../../protocol/relay.ts';
import type { RelayPool, RelaySink } from '../../workers/shared/relay-sink.ts';
import { parseExposition, sampleValue } from '../helpers/prometheus.ts';

// The relay tap in front of a pool that hands its sinks to the test: each worker message passes through to the
// gateway's sink unchanged, and the first and last ones are timed per provider.

function fakePool() {
  const sinks: RelaySink[] = [];
  const handle = { body() {}, pause() {}, resume() {}, credit() {}, abort: () => false };
  const pool: RelayPool = { start: (_req, sink) => (sinks.push(sink), handle), close: async () => undefined };
  return { pool, sinks };
}

const request = (id: string, kind = 'openai') => ({ target: { id, kind } }) as unknown as RelayRequest;
const end = { usage: null, responseId: null };

function recorder() {
  const heard: string[] = [];
  const sink: RelaySink = {
    whole: (status) => void heard.push(`whole ${status}`),
    head: (status) => void heard.push(`head ${status}`),
    data: (chunks) => void heard.push(`data ${chunks.length}`),
    end: () => void heard.push('end'),
    error: (e) => void heard.push(`error ${e.code}`),
    aborted: () => void heard.push('aborted'),
    ack: (bytes) => void heard.push(`ack ${bytes}`),
  };
  return { sink, heard };
}

test(
  'times each call per provider, counts its errors by code and its pool in flight, and passes every message ' + 'on',
  () => {
    const registry = createRegistry();
    const { tap } = createRelayMetrics(registry);
    const { pool, sinks } = fakePool();
    const tapped = tap(pool);
    const calls = [recorder(), recorder(), recorder(), recorder()];
    tapped.start(request('openai'), calls[0]!.sink);
    tapped.start(request('openai'), calls[1]!.sink);
    tapped.start(request('local', 'embedded'), calls[2]!.sink);
    tapped.start(request('openai'), calls[3]!.sink);
    let f = parseExposition(registry.render());
    assert.equal(sampleValue(f, 'switchyard_relay_inflight_calls', { pool: 'relay' }), 3);
    assert.equal(sampleValue(f, 'switchyard_relay_inflight_calls', { pool: 'runtime' }), 1);

    sinks[0]!.whole(200, {}, '{}', end);
    sinks[1]!.head(200, {});
    sinks[1]!.data(['a', 'b']);
    sinks[1]!.ack!(5);
    sinks[1]!.end(end);
    sinks[2]!.aborted(null);
    sinks[3]!.error(new ServiceError('UPSTREAM_RATE_LIMITED', 'slow down'), null);
    // A message after the last (never sent by a pool, but cheap to survive) does not count twice.
    sinks[3]!.aborted(null);
    assert.deepEqual(
      calls.map((c) => c.heard),
      [['whole 200'], ['head 200', 'data 2', 'ack 5', 'end'], ['aborted'], ['error UPSTREAM_RATE_LIMITED', 'aborted']],
    );

    f = parseExposition(registry.render());
    assert.equal(sampleValue(f, 'switchyard_relay_inflight_calls', { pool: 'relay' }), 0);
    assert.equal(sampleValue(f, 'switchyard_relay_inflight_calls', { pool: 'runtime' }), 0);
    assert.equal(sampleValue(f, 'switchyard_upstream_ttfb_seconds_count', { provider: 'openai' }), 2);
    assert.equal(sampleValue(f, 'switchyard_upstream_duration_seconds_count', { provider: 'openai' }), 3);
    assert.equal(sampleValue(f, 'switchyard_upstream_duration_seconds_count', { provider: 'local' }), 1);
    assert.equal(sampleValue(f, 'switchyard_upstream_ttfb_seconds_count', { provider: 'local' }), 0);
    assert.equal(
      sampleValue(f, 'switchyard_upstream_errors_total', { provider: 'openai', code: 'UPSTREAM_RATE_LIMITED' }),
      1,
    );
  },
);
