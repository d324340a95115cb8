import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pino } from 'pino';
import { openStoreEnv } from '../../../store/env.ts';
import { gaugeDataRepo } from '../../../store/gauge-data-repo.ts';
import { createGaugeActor } from '../../../workers/gauge/actor.ts';

// The edge's handle on the real gauge worker thread: refresh round trips, one refresh at a time, and the
// live-header tap (a batch per interval; gauge-secrets.suite.ts proves nothing else of a response is kept).

const dir = mkdtempSync(join(tmpdir(), 'gauge-actor-'));
const actor = createGaugeActor({
  dataDir: dir,
  log: pino({ level: 'silent' }),
  allowedHosts: 'loopback',
  trafficEveryMs: 10,
});
after(async () => {
  await actor.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a refresh crosses to the worker and back; a second one meanwhile is 409 CONFLICT', async () => {
  actor.configure(true, 90);
  const first = actor.refresh(['service', 'live-headers']);
  assert.equal(actor.refreshing(), true);
  await assert.rejects(actor.refresh(['service']), (err: { code?: string }) => err.code === 'CONFLICT');
  const outcomes = await first;
  assert.deepEqual(
    outcomes.map((o) => [o.sourceId, o.ok]),
    [
      ['service', true],
      ['live-headers', true],
    ],
  );
  assert.equal(actor.refreshing(), false);
  assert.equal((await actor.refresh(['service']))[0]!.ok, true, 'the gate opens again');
});

test('rate-limit headers reach the worker as a reading, for the provider kinds Gauge reads', async () => {
  actor.observe('relay-a', 'openai', {
    'x-ratelimit-limit-requests': '60',
    'x-ratelimit-remaining-requests': '59',
    'openai-organization': 'org-x',
    'set-cookie': 'a=b',
  });
  actor.observe('local', 'ollama', { 'x-ratelimit-limit-requests': '1', 'x-ratelimit-remaining-requests': '1' });
  actor.traffic();
  const env = openStoreEnv(dir);
  try {
    const data = gaugeDataRepo(env);
    const deadline = Date.now() + 10_000;
    while (data.reading('live-headers.relay-a') === undefined && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    const reading = data.reading('live-headers.relay-a')!.reading;
    assert.deepEqual(
      reading.windows.map((w) => [w.kind, w.limit, w.remaining]),
      [['requests', 60, 59]],
    );
    assert.equal(data.reading('live-headers.local'), undefined, 'only kinds Gauge reads headers of');
  } finally {
    await env.close();
  }
});

test('a worker that dies fails its calls, is started again, and serves the next refresh', async () => {
  const home = mkdtempSync(join(tmpdir(), 'gauge-actor-dying-'));
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const dying = createGaugeActor({
    dataDir: home,
    log,
    allowedHosts: 'loopback',
    respawnQuietMs: 50,
    entry: new URL('./dying-entry.js', import.meta.url),
  });
  try {
    dying.configure(true, 90);
    assert.equal((await dying.refresh(['service']))[0]!.ok, true);
    await assert.rejects(
      dying.prune(),
      (err: { code?: string; message?: string }) => err.code === 'INTERNAL' && /stopped/.test(err.message ?? ''),
    );
    assert.ok(lines.some((l) => l.msg === 'gauge worker stopped; restarting it' && l.restartInMs === 50));
    // A new worker, configured again (Gauge on), collects.
    const outcomes = await dying.refresh(['service']);
    assert.deepEqual(
      outcomes.map((o) => [o.sourceId, o.ok]),
      [['service', true]],
    );
  } finally {
    await dying.close();
    rmSync(home, { recursive: true, force: true });
  }
});
