import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startOpenAIGaugeFake, type OpenAIGaugeFake } from '../fakes/gauge/openai.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// W2.1 through the running service against the provider fake: 20 accounts refreshed at once never have more
// than the pool's 4 collections in flight at the fake (counted there, not in the service), and a hung source
// costs the others no more than its time limit: it ends as `timeout` while all the others succeed.

const ADMIN_KEY = `sk-admin-pool-test-${process.pid}-0123456789`;
const ACCOUNTS = 20;
const POOL = 4;

let svc: InProcessService;
let fake: OpenAIGaugeFake;
const ids: string[] = [];

/** An OpenAI account at the fake, by its admin key. */
const account = (label: string) => ({
  providerId: 'openai',
  authMode: 'admin_key',
  label,
  credential: ADMIN_KEY,
  config: { baseUrl: fake.baseUrl },
});

before(async () => {
  fake = await startOpenAIGaugeFake({ adminKey: ADMIN_KEY });
  // A time limit long enough for a held collection, short enough for the hung one to end the test quickly.
  svc = await startInProcess({
    env: { SWITCHYARD_GAUGE_ALLOWED_HOSTS: 'loopback', SWITCHYARD_GAUGE_TIMEOUT_MS: '4000' },
  });
  assert.equal((await svc.request('PATCH', '/v1/settings', { body: { gauge: { enabled: true } } })).status, 200);
  for (let i = 0; i < ACCOUNTS; i++) {
    const created = await svc.request('POST', '/v1/gauge/accounts', { body: account(`org ${i}`) });
    assert.equal(created.status, 201, created.text);
    ids.push(created.json.id as string);
  }
});
after(async () => {
  await svc.stop();
  await fake.close();
});

test(`${ACCOUNTS} accounts refreshed at once reach the provider at most ${POOL} at a time`, async () => {
  fake.resetCounters();
  // Every request waits at the fake until the pool is seen full, so the bound is tested at its edge.
  fake.hold();
  const refresh = svc.request('POST', '/v1/gauge/refresh', { body: { sourceIds: ids } });
  await fake.whenConcurrent(POOL);
  fake.release();
  const reply = await refresh;
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(
    reply.json.data.map((o: { sourceId: string }) => o.sourceId),
    ids,
    'outcomes in the requested order',
  );
  const failed = reply.json.data.filter((o: { ok: boolean }) => !o.ok);
  assert.deepEqual(failed, [], 'every source collected');
  assert.equal(fake.maxConcurrent, POOL);
  assert.equal(fake.concurrent, 0);
  assert.equal(reply.text.includes(ADMIN_KEY), false);
});

test('a hung source ends as a timeout at its limit; the other sources are all collected', async () => {
  fake.resetCounters();
  fake.hangNext();
  const reply = await svc.request('POST', '/v1/gauge/refresh', { body: { sourceIds: ids } });
  assert.equal(reply.status, 200, reply.text);
  const outcomes = reply.json.data as { sourceId: string; ok: boolean; code?: string }[];
  const failed = outcomes.filter((o) => !o.ok);
  assert.equal(failed.length, 1, reply.text.slice(0, 500));
  assert.equal(failed[0]!.code, 'timeout');
  assert.equal(outcomes.filter((o) => o.ok).length, ACCOUNTS - 1);
  assert.ok(fake.maxConcurrent <= POOL);
  // Its last good reading (from the first test) is still there.
  const readings = await svc.request('GET', `/v1/gauge/readings?accountId=${encodeURIComponent(failed[0]!.sourceId)}`);
  assert.equal(readings.status, 200);
  assert.equal(readings.json.data.length, 1);
});

// Each source may take 300 s here: a stop that waited for the turn-on refresh would outlast this test's limit, as
// it did when the gauge family closed its worker only after that refresh had ended by itself.
test('a stop while the turn-on refresh waits on a source that never answers ends that refresh at once', {
  timeout: 60_000,
}, async () => {
  // Two in-process services may not live with different time limits; after() stops this one again.
  await svc.stop();
  const service = await startInProcess({
    env: { SWITCHYARD_GAUGE_ALLOWED_HOSTS: 'loopback', SWITCHYARD_GAUGE_TIMEOUT_MS: '300000' },
  });
  // An account made while Gauge is off is first collected by the refresh that turning Gauge on starts.
  const created = await service.request('POST', '/v1/gauge/accounts', { body: account('never answered') });
  assert.equal(created.status, 201, created.text);
  fake.resetCounters();
  fake.hold();
  try {
    const on = await service.request('PATCH', '/v1/settings', { body: { gauge: { enabled: true } } });
    assert.equal(on.status, 200, on.text);
    // The hung request of the test before is still open at the fake: this refresh's is the one after it.
    await fake.whenConcurrent(fake.concurrent + 1);
    await service.stop();
    assert.ok(service.logLines().some((l) => l.msg === 'stopped'));
  } finally {
    fake.release();
  }
});
