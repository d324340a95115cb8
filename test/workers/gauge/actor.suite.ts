import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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

/** The names of this process's threads (Linux). */
const threadNames = () =>
  readdirSync('/proc/self/task').map((t) => {
    try {
      return readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim();
    } catch {
      return '';
    }
  });

/** This process's OS threads (Linux): `new Worker()` starts one before it returns. */
const threads = () => Number(/^Threads:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]);

test('while Gauge is off no worker starts with the actor: the first call starts it, or idleStartMs', async () => {
  const home = mkdtempSync(join(tmpdir(), 'gauge-actor-lazy-'));
  const log = pino({ level: 'silent' });
  const entry = new URL('./announcing-entry.js', import.meta.url);
  const baseline = threads();
  let started = 0;
  const quiet = createGaugeActor({
    dataDir: home,
    log,
    allowedHosts: 'loopback',
    entry,
    idleStartMs: 60_000,
    onCollected: (ids) => void (started += ids.filter((id) => id === 'started').length),
  });
  // The actor's timer and worker never hold a process open (a service's server does): this test's wait does.
  const hold = setInterval(() => undefined, 1_000);
  let announced!: () => void;
  const announcement = new Promise<void>((resolve) => (announced = resolve));
  const idle = createGaugeActor({
    dataDir: home,
    log,
    allowedHosts: 'loopback',
    entry,
    idleStartMs: 20,
    onCollected: (ids) => ids.includes('started') && announced(),
  });
  try {
    quiet.configure(false, 90);
    quiet.setupChanged();
    quiet.traffic();
    idle.configure(false, 90);
    assert.equal(threads(), baseline, 'no thread for a Gauge that is off');
    assert.equal(await quiet.prune(), 0, 'a call starts the worker and is answered');
    assert.equal(started, 1);
    await announcement;
    assert.ok(
      threadNames().includes('sy-gauge'),
      'a worker thread names itself after its actor (workers/load-beside.js)',
    );
    quiet.configure(true, 90);
    assert.equal((await quiet.refresh(['service']))[0]!.ok, true, 'turned on, the same worker collects');
    assert.equal(started, 1, 'one worker');
  } finally {
    clearInterval(hold);
    await quiet.close();
    await idle.close();
    rmSync(home, { recursive: true, force: true });
  }
});
