import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pino } from 'pino';
import { createEventBus } from '../../control/events.ts';
import { createLimits } from '../../control/limits.ts';
import { type CallFacts, createAdmission } from '../../edge/gateway/admission.ts';
import type { LimitRecord } from '../../protocol/http/limits.ts';
import { UNDER_WAY_MS } from '../../protocol/limit-windows.ts';
import { auditRepo } from '../../store/audit-repo.ts';
import { openStoreEnv } from '../../store/env.ts';
import { limitRepo } from '../../store/limit-repo.ts';
import { answered, assertNotFound, auditedActions, race } from '../helpers/races.ts';
import { removeDirs, tempDataDir } from '../helpers/usage.ts';

// What the control plane makes of stored limits at start: gates stored before `stops`, and the sessions gates
// marked, forgotten once a day has passed since their last admitted call.

const dirs: string[] = [];
after(() => removeDirs(dirs));

const NOW = Date.UTC(2026, 10, 27, 12, 30);
const gate: LimitRecord = {
  id: 'lim_01JGATE0000000000000000000',
  name: 'gate',
  enabled: true,
  scope: { kind: 'service', id: null },
  window: 'gauge',
  metric: 'gauge_percent',
  max: 80,
  // As stored before `stops` existed.
  gauge: { accountId: 'acct', windowId: 'five_hour' },
  createdAt: '',
  updatedAt: '',
};

/** A call of `session`, the whole service in scope. */
const of = (session: string): CallFacts => ({
  principal: { tokenId: 'tok_a', scopes: ['inference'], serviceAccountId: null },
  packSlug: null,
  headers: { 'x-session-id': session },
  metered: true,
  bodyBytes: 3,
  maxOutput: 1,
  priced: null,
});

async function started(stored: (repo: ReturnType<typeof limitRepo>) => void, dir = tempDataDir(dirs)) {
  const env = openStoreEnv(dir);
  const repo = limitRepo(env);
  await env.commit(() => stored(repo));
  const limits = createLimits({
    env,
    repo,
    audit: auditRepo(env),
    bus: createEventBus(),
    log: pino({ level: 'silent' }),
    now: () => NOW,
    journalDir: join(dir, 'limit-journal'),
    scopeExists: async () => true,
    gaugeShare: () => ({ percent: 95, resetsAt: null }),
    gaugeAccountExists: () => true,
  });
  return { dir, env, repo, limits };
}

test('a gate stored before `stops` stops every call, and its view says so', async () => {
  const { env, limits } = await started((repo) => repo.stagePut(gate));
  try {
    assert.equal((await limits.get(gate.id)).gauge?.stops, 'calls');
    const admission = createAdmission(limits.admission);
    assert.throws(() => admission.admit(of('s')), /is 80% used or more;/);
  } finally {
    await limits.close();
    await env.close();
  }
});

test("a gate's session marked over a day ago is forgotten at start; a later one is kept", async () => {
  const hour = (ms: number) => ms - (ms % 3_600_000);
  const recent = hour(NOW - UNDER_WAY_MS + 3_600_000);
  const old = hour(NOW - UNDER_WAY_MS);
  const { env, repo, limits } = await started((r) => {
    r.stagePut({ ...gate, gauge: { ...gate.gauge!, stops: 'new_sessions' } });
    r.stageCounter(gate.id, 'recent', { windowStart: recent, used: '0' });
    r.stageCounter(gate.id, 'old', { windowStart: old, used: '0' });
  });
  try {
    await limits.close();
    assert.deepEqual(
      repo.counters().map((c) => [c.scopeKey, c.counter.windowStart]),
      [['recent', recent]],
    );
    const admission = createAdmission(limits.admission);
    assert.equal(admission.admit(of('recent')), null, 'under way');
    assert.throws(() => admission.admit(of('old')), /not of a session under way/);
  } finally {
    await env.close();
  }
});

const actor = { actorType: 'system', actorId: 'test' } as const;
const cap: LimitRecord = {
  id: 'lim_01JCAP00000000000000000000',
  name: 'cap',
  enabled: true,
  scope: { kind: 'service', id: null },
  window: 'day',
  metric: 'requests',
  max: 10,
  gauge: null,
  createdAt: '',
  updatedAt: '',
};

/** After the race: no limit listed or enforced, none stored, none after the store is reopened. */
async function assertRemoved(world: Awaited<ReturnType<typeof started>>) {
  assert.deepEqual(world.limits.list(), []);
  assert.deepEqual(world.limits.admission.active(), []);
  assert.equal(world.repo.get(cap.id), undefined);
  await world.limits.close();
  await world.env.close();
  const again = await started(() => undefined, world.dir);
  try {
    assert.deepEqual(again.limits.list(), []);
    assert.deepEqual(again.limits.admission.active(), []);
  } finally {
    await again.limits.close();
    await again.env.close();
  }
}

test('a change racing the removal of its limit answers NOT_FOUND and writes nothing (W4.6)', async () => {
  const world = await started((repo) => repo.stagePut(cap));
  const [removed, changed] = await race(
    () => world.limits.remove(cap.id, actor, 'req_1'),
    () => world.limits.update(cap.id, { name: 'x' }, actor, 'req_2'),
  );
  answered(removed);
  assertNotFound(changed, /^No limit with ID `lim_/);
  assert.deepEqual(auditedActions(world.env, cap.id), ['limit.delete']);
  await assertRemoved(world);
});

test('a removal racing an earlier change of its limit still removes it (W4.6)', async () => {
  const world = await started((repo) => repo.stagePut(cap));
  const [changed, removed] = await race(
    () => world.limits.update(cap.id, { max: 20 }, actor, 'req_1'),
    () => world.limits.remove(cap.id, actor, 'req_2'),
  );
  assert.equal(answered(changed).max, 20);
  answered(removed);
  assert.deepEqual(auditedActions(world.env, cap.id), ['limit.update', 'limit.delete']);
  await assertRemoved(world);
});
