import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { createKeyPool, type PoolKey } from '../../../edge/gateway/key-pool.ts';
import { createKeyPoolBuffer, createKeyPoolTable, sessionHash } from '../../../state/key-pool-table.ts';
import { headroomOf, retryAfterMs } from '../../../protocol/ratelimit-headers.ts';

// The choice of a provider's key per call (W4.2): headroom from live headers, cooldowns, keys set aside,
// session affinity, and the bounded session table shared by threads.

const key = (id: string, weight = 1, over: Partial<PoolKey> = {}): PoolKey => ({
  id,
  weight,
  enabled: true,
  rejectedAt: null,
  updatedAt: 0,
  ...over,
});

function pool(options: { sessions?: number; idleMs?: number } = {}) {
  let clock = 1_000_000;
  const buffer = createKeyPoolBuffer(64, options.sessions ?? 1024);
  const table = createKeyPoolTable(buffer, 64, options.sessions ?? 1024);
  const p = createKeyPool({ table, now: () => clock, idleMs: () => options.idleMs ?? 600_000 });
  return { p, table, buffer, tick: (ms: number) => void (clock += ms), now: () => clock };
}

const openai = (remaining: number, limit = 100, reset = '20s') => ({
  'x-ratelimit-remaining-requests': String(remaining),
  'x-ratelimit-limit-requests': String(limit),
  'x-ratelimit-reset-requests': reset,
});

describe('rate-limit headers', () => {
  it("reads OpenAI's, Anthropic's and OpenRouter's spellings, resets as durations, instants or epoch ms", () => {
    const now = Date.parse('2026-12-07T00:00:00Z');
    assert.deepEqual(headroomOf(openai(3, 10, '6m0s'), now).requests, {
      remaining: 3,
      limit: 10,
      resetsAt: now + 360_000,
    });
    const anthropic = headroomOf(
      {
        'anthropic-ratelimit-requests-remaining': '49',
        'anthropic-ratelimit-requests-limit': '50',
        'anthropic-ratelimit-requests-reset': '2026-12-07T00:01:00Z',
        'anthropic-ratelimit-input-tokens-remaining': '100',
        'anthropic-ratelimit-input-tokens-limit': '1000',
        'anthropic-ratelimit-output-tokens-remaining': '900',
        'anthropic-ratelimit-output-tokens-limit': '1000',
      },
      now,
    );
    assert.deepEqual(anthropic.requests, { remaining: 49, limit: 50, resetsAt: now + 60_000 });
    assert.deepEqual(
      anthropic.tokens,
      { remaining: 100, limit: 1000, resetsAt: null },
      'the tighter of input and output',
    );
    const openrouter = headroomOf({ 'x-ratelimit-remaining': '7', 'x-ratelimit-reset': String(now + 5000) }, now);
    assert.deepEqual(openrouter.requests, { remaining: 7, limit: null, resetsAt: now + 5000 });
    // Junk is no figure.
    assert.deepEqual(
      headroomOf({ 'x-ratelimit-remaining-requests': '-1', 'x-ratelimit-reset-requests': 'x'.repeat(99) }, now),
      {
        requests: null,
        tokens: null,
      },
    );
    assert.equal(retryAfterMs('2', now), 2000);
    assert.equal(retryAfterMs('Mon, 07 Dec 2026 00:00:30 GMT', now), 30_000);
    assert.equal(retryAfterMs('soon', now), null);
  });
});

describe('the key pool', () => {
  it('takes the key with the most headroom, weighted, and spreads calls that start together', () => {
    const { p } = pool();
    const keys = [key('a'), key('b'), key('c', 2)];
    p.observe('a', openai(90));
    p.observe('b', openai(10));
    p.observe('c', openai(30));
    // c: 2 x 0.3 = 0.6 against a's 0.9: a.
    assert.equal(p.choose('prov', keys, null)!.id, 'a');
    // In flight: a's score falls to 0.45, c's 0.6 leads.
    p.began('a');
    assert.equal(p.choose('prov', keys, null)!.id, 'c');
    p.ended('a');
    assert.equal(p.choose('prov', keys, null)!.id, 'a');
  });

  it('a 429 cools a key down until retry-after, else its window reset; an exhausted window has no headroom', () => {
    const { p, tick } = pool();
    const keys = [key('a'), key('b')];
    p.observe('a', openai(90));
    p.observe('b', openai(50));
    const until = p.rateLimited('a', { 'retry-after': '3' });
    assert.equal(p.choose('prov', keys, null)!.id, 'b');
    tick(3_001);
    assert.equal(p.choose('prov', keys, null)!.id, 'a');
    assert.ok(until > 0);
    // No retry-after: until the exhausted window resets (20 s here).
    p.rateLimited('a', openai(0, 100, '20s'));
    tick(19_000);
    assert.equal(p.choose('prov', keys, null)!.id, 'b');
    tick(1_001);
    assert.equal(p.choose('prov', keys, null)!.id, 'a', 'the window reset: its headroom is whole again');
    // Both cooling: the one whose cooldown ends first.
    p.rateLimited('a', { 'retry-after': '10' });
    p.rateLimited('b', { 'retry-after': '4' });
    assert.equal(p.choose('prov', keys, null)!.id, 'b');
  });

  it('sets a rejected key aside on every thread until it is edited; disabled and excluded keys are skipped', () => {
    const { p } = pool();
    const keys = [key('a'), key('b'), key('c', 1, { enabled: false })];
    p.observe('a', openai(90));
    p.observe('b', openai(50));
    p.rejected('a');
    assert.equal(p.choose('prov', keys, null)!.id, 'b');
    // Edited after the rejection: usable again.
    assert.equal(p.choose('prov', [key('a', 1, { updatedAt: Date.now() * 2 }), keys[1]!], null)!.id, 'a');
    assert.equal(p.choose('prov', keys, null, new Set(['b'])), null, 'nothing usable is left');
    assert.equal(p.choose('prov', [key('d', 1, { rejectedAt: 5 })], null), null);
  });

  it('a session keeps its key while that key has headroom, then moves, and forgets after its idle time', () => {
    const { p, tick } = pool({ idleMs: 600_000 });
    const keys = [key('a'), key('b')];
    p.observe('a', openai(50));
    p.observe('b', openai(40));
    assert.equal(p.choose('prov', keys, 's1')!.id, 'a');
    // b has more room now, but s1 stays on a: its prompt cache is there.
    p.observe('b', openai(99));
    assert.equal(p.choose('prov', keys, 's1')!.id, 'a');
    assert.equal(p.choose('prov', keys, 's2')!.id, 'b', 'a new session follows headroom');
    assert.equal(p.live('a').sessions, 1);
    // a runs dry: s1 moves, and stays where it moved.
    p.observe('a', openai(0));
    assert.equal(p.choose('prov', keys, 's1')!.id, 'b');
    p.observe('a', openai(100));
    assert.equal(p.choose('prov', keys, 's1')!.id, 'b');
    // Idle past its time: the session is forgotten, and chooses again by headroom.
    p.observe('b', openai(10));
    tick(600_001);
    assert.equal(p.choose('prov', keys, 's1')!.id, 'a');
  });

  it('holds a bounded number of sessions, the least recently used going first', () => {
    const { p, tick } = pool({ sessions: 64 });
    const keys = [key('a'), key('b')];
    for (let i = 0; i < 1000; i++) {
      p.choose('prov', keys, `s${i}`);
      tick(1);
    }
    assert.ok(p.live('a').sessions + p.live('b').sessions <= 64);
    // The newest sessions are still kept.
    p.observe('a', openai(1));
    p.observe('b', openai(100));
    const newest = p.choose('prov', keys, 's999')!.id;
    p.observe(newest === 'a' ? 'b' : 'a', openai(100));
    assert.equal(p.choose('prov', keys, 's999')!.id, newest);
  });

  it('threads share the table: a cooldown and a session written in a worker are seen here', async () => {
    const { p, buffer } = pool();
    const keys = [key('a'), key('b')];
    p.observe('a', openai(90));
    p.observe('b', openai(80));
    const source = `
      const { workerData, parentPort } = require('node:worker_threads');
      const t = workerData;
      parentPort.postMessage('ready');
    `;
    // The worker writes through the same buffer with its own view, as an edge thread does.
    const worker = new Worker(
      `${source}
      const cells = new Float64Array(t.buffer, 64 * 8, 64 * 8);
      parentPort.on('message', (slot) => { cells[slot * 8 + 6] = Date.now() * 10; parentPort.postMessage('done'); });`,
      { eval: true, workerData: { buffer } },
    );
    await new Promise((r) => worker.once('message', r));
    const table = createKeyPoolTable(buffer, 64, 1024);
    worker.postMessage(table.slotOf('a'));
    await new Promise((r) => worker.once('message', r));
    await worker.terminate();
    assert.equal(p.choose('prov', keys, null)!.id, 'b', 'a cools down: the worker wrote it');
    assert.notEqual(sessionHash('prov', 's'), sessionHash('other', 's'));
  });
});
