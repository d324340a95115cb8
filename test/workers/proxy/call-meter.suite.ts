import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { after, before, describe, it } from 'node:test';
import type { UsageEvent, UsageReport } from '../../../protocol/gateway.ts';
import type { FromWorker, RelayRequest } from '../../../protocol/relay.ts';
import { CallMeter } from '../../../workers/proxy/call-meter.ts';
import { createRelayPool, type RelaySink } from '../../../workers/proxy/relay-pool.ts';
import { targetFor } from './helpers.ts';

// A relay worker meters the calls whose request carries `meter` (W3.2): one usage event and one usage line per
// call, made at its last message, with the outcome the edge would have given it; and a pool whose worker dies
// reports its metered calls as failed.

const BASE = ',"service":"switchyard","edgeThread":1';

function request(id: string, baseUrl = 'http://127.0.0.1:9/v1', meter = true): RelayRequest {
  return {
    op: 'chat.completions',
    target: targetFor('openai', baseUrl),
    credentialRef: null,
    requestId: id,
    clientModel: 'm',
    upstreamModelId: 'm',
    params: {},
    query: '',
    headers: {},
    body: JSON.stringify({ model: 'm', messages: [] }),
    bodyStreamed: false,
    ...(meter && { meter: { tokenId: 'tok_a', modelId: 'test-openai/m' } }),
  };
}

const USAGE: UsageReport = {
  inputTokens: 3,
  outputTokens: 4,
  cachedInputTokens: null,
  reasoningTokens: null,
  totalTokens: 7,
  costUsd: null,
  toolCalls: {},
};
const end = { usage: USAGE, responseId: null };

function usageOf(m: FromWorker | null): { events: UsageEvent[]; lines: Record<string, unknown>[] } {
  assert.ok(m !== null && m.t === 'usage', 'a usage message');
  const lines = m.lines === '' ? [] : m.lines.trimEnd().split('\n');
  return { events: m.events, lines: lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('CallMeter', () => {
  it('makes one event and one usage line at a metered call, none for another call', () => {
    const meter = new CallMeter(BASE);
    meter.start(1, request('req_1'));
    meter.start(2, request('req_2', undefined, false));
    meter.posted({ t: 'head', id: 1, status: 200, headers: {} });
    assert.equal(meter.take(), null, 'nothing before the last message');
    meter.posted({ t: 'end', id: 1, end, chunks: [] });
    meter.posted({ t: 'whole', id: 2, status: 200, headers: {}, body: '{}', end });
    // A message after the last one (an abort that crossed it) adds nothing.
    meter.posted({ t: 'aborted', id: 1, usage: null });
    const { events, lines } = usageOf(meter.take());
    assert.equal(events.length, 1);
    const [e] = events;
    assert.deepEqual(
      { ...e!, at: 0 },
      {
        kind: 'usage',
        requestId: 'req_1',
        at: 0,
        tokenId: 'tok_a',
        providerId: 'test-openai',
        modelId: 'test-openai/m',
        op: 'chat.completions',
        outcome: 'ok',
        usage: USAGE,
      },
    );
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.msg, 'usage');
    assert.equal(lines[0]!.edgeThread, 1);
    assert.equal(lines[0]!.service, 'switchyard');
    assert.equal(lines[0]!.reqId, 'req_1');
    assert.deepEqual(lines[0]!.usage, { ...USAGE });
    assert.equal(meter.take(), null, 'taken once');
  });

  it('gives a stopped call the outcome the edge would: aborted, ok once served, failed at shutdown', () => {
    const meter = new CallMeter(null);
    for (let id = 1; id <= 4; id++) meter.start(id, request(`req_${id}`));
    meter.stopped(1, undefined);
    meter.stopped(2, 'served');
    meter.stopped(3, 'shutdown');
    for (let id = 1; id <= 3; id++) meter.posted({ t: 'aborted', id, usage: id === 2 ? USAGE : null });
    meter.posted({ t: 'error', id: 4, error: { code: 'UPSTREAM_ERROR', message: 'x', status: 502 }, usage: null });
    const { events, lines } = usageOf(meter.take());
    assert.deepEqual(
      events.map((e) => [e.requestId, e.outcome, e.usage?.totalTokens ?? null]),
      [
        ['req_1', 'aborted', null],
        ['req_2', 'ok', 7],
        ['req_3', 'failed', null],
        ['req_4', 'failed', null],
      ],
    );
    assert.deepEqual(lines, [], 'no lines when the log is quieter than info');
  });
});

describe('a relay pool that meters', () => {
  let baseUrl = '';
  /** Answers at once, or holds each request (`holding` hears of each). */
  let hold = false;
  const held: ServerResponse[] = [];
  let holding: () => void = () => {};
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (hold) {
        held.push(res);
        return holding();
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ id: 'c', choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } }),
      );
    });
  });
  before(async () => {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  function meteredPool() {
    const reports: { events: UsageEvent[]; lines: string }[] = [];
    let heard: () => void = () => {};
    const pool = createRelayPool({
      dataDir: tmpdir(),
      threads: 1,
      meter: { lineBase: BASE, report: (events, lines) => (reports.push({ events, lines }), heard()) },
    });
    const events = () => reports.flatMap((r) => r.events);
    const until = (n: number) =>
      new Promise<void>((resolve) => {
        heard = () => events().length >= n && resolve();
        heard();
      });
    return { pool, reports, events, until };
  }

  const sink = (onEnd: () => void = () => {}): RelaySink => ({
    whole: onEnd,
    head() {},
    data() {},
    end: onEnd,
    error: onEnd,
    aborted: onEnd,
  });

  // A report that never comes fails the test at its timeout instead of holding the suite.
  it('reports a metered call once, with its line, after its answer; an unmetered call not at all', {
    timeout: 20_000,
  }, async () => {
    const { pool, reports, events, until } = meteredPool();
    try {
      assert.equal(pool.metersCalls, true);
      let answered = 0;
      pool.start(
        request('req_plain', baseUrl, false),
        sink(() => answered++),
      );
      pool.start(
        request('req_metered', baseUrl),
        sink(() => answered++),
      );
      await until(1);
      assert.equal(answered, 2, 'the answers were delivered before (or with) the usage');
      assert.deepEqual(
        events().map((e) => [e.requestId, e.outcome, e.usage?.totalTokens]),
        [['req_metered', 'ok', 7]],
      );
      const line = JSON.parse(reports.map((r) => r.lines).join('')) as Record<string, unknown>;
      assert.equal(line.reqId, 'req_metered');
      assert.equal(line.edgeThread, 1);
    } finally {
      await pool.close();
    }
  });

  it('reports every metered call of a closing pool exactly once, as failed', { timeout: 20_000 }, async () => {
    const { pool, events, until } = meteredPool();
    hold = true;
    try {
      const allHeld = new Promise<void>((resolve) => (holding = () => held.length === 3 && resolve()));
      for (let i = 0; i < 3; i++) pool.start(request(`req_${i}`, baseUrl), sink());
      await allHeld;
      // No grace: whichever comes first, the worker's reports or the pool's for a worker that is gone.
      await pool.close(0);
      await until(3);
    } finally {
      hold = false;
      for (const res of held.splice(0)) res.destroy();
    }
    assert.deepEqual(
      events()
        .map((e) => e.requestId)
        .sort(),
      ['req_0', 'req_1', 'req_2'],
    );
    assert.ok(events().every((e) => e.outcome === 'failed' && e.tokenId === 'tok_a'));
  });
});
