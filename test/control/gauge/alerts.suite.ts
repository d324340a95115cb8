import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createGaugeAlerts, type GaugeAlerts } from '../../../control/gauge/alerts.ts';
import { ServiceError } from '../../../protocol/errors.ts';
import type { GaugeReading } from '../../../protocol/gauge.ts';
import type { GaugeBudgetStatus } from '../../../protocol/gauge-money.ts';
import { auditRepo } from '../../../store/audit-repo.ts';
import { openStoreEnv, type StoreEnv } from '../../../store/env.ts';
import { gaugeAlertRepo } from '../../../store/gauge-alert-repo.ts';
import { gaugeDataRepo, type GaugeDataRepo } from '../../../store/gauge-data-repo.ts';
import { gaugeSourceRepo } from '../../../store/gauge-source-repo.ts';

// The alert service on a real store with a clock the test moves: rule validation per kind, a quota that fires,
// recovers with hysteresis and fires again only after the cooldown, the event state machine, delivery, and a
// rule's deletion taking only its own events. Readings are written the way the gauge worker writes them.

const T0 = Date.parse('2026-11-24T12:00:00.000Z');
const MIN = 60_000;
const who = { actorType: 'token' as const, actorId: 'tok_test' };
let dir: string;
let env: StoreEnv;
let data: GaugeDataRepo;
let alerts: GaugeAlerts;
let clock = T0;
let enabled = true;
let budgets: GaugeBudgetStatus[] = [];
/** What the service would publish as `gauge.alert` events: each committed event's state. */
const published: string[] = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'switchyard-alerts-'));
  env = openStoreEnv(dir);
  data = gaugeDataRepo(env);
  const sources = gaugeSourceRepo(env);
  await sources.ensureBuiltIns(T0);
  await env.commit(() =>
    sources.stagePut({
      id: 'acct_1',
      kind: 'account',
      collectorId: 'openrouter',
      providerId: 'openrouter',
      authMode: 'api_key',
      label: 'OpenRouter',
      enabled: true,
      config: {},
      builtIn: false,
      credentialRef: null,
      createdAt: T0,
      updatedAt: T0,
    }),
  );
  alerts = createGaugeAlerts({
    env,
    repo: gaugeAlertRepo(env),
    data,
    sources,
    audit: auditRepo(env),
    settings: () => ({ enabled, retentionDays: 30 }),
    budgets: () => budgets,
    log: { warn: () => undefined },
    now: () => clock,
    onEvent: (e) => void published.push(e.state),
  });
});
after(async () => {
  await alerts.close();
  await env.close();
  rmSync(dir, { recursive: true, force: true });
});

async function remaining(left: number): Promise<void> {
  const reading: GaugeReading = {
    accountId: 'acct_1',
    providerId: 'openrouter',
    collectedAt: new Date(clock).toISOString(),
    source: 'polled',
    confidence: 'high',
    windows: [
      {
        id: 'key_limit',
        kind: 'spend',
        period: 'month',
        used: 10 - left,
        limit: 10,
        remaining: left,
        utilization: null,
        resetsAt: '2026-12-01T00:00:00.000Z',
      },
    ],
    spend: null,
    credits: null,
  };
  await env.commit(() => data.stageReading('acct_1', reading));
}
const events = (ruleId: string) => alerts.listEvents({ ruleId }, 200, 0).data;
const invalid = (param: string, message?: RegExp) => (err: unknown) => {
  assert.ok(err instanceof ServiceError, String(err));
  assert.deepEqual([err.code, err.param], ['INVALID_REQUEST', param]);
  if (message) assert.match(err.message, message);
  return true;
};

describe('rules', () => {
  test('each kind takes only its target fields and its threshold range; defaults fill the rest', async () => {
    await assert.rejects(
      alerts.createRule({ name: 'x', kind: 'quota_low', target: { budgetId: 'b' } }, who, 'req_1'),
      invalid('target.budgetId'),
    );
    await assert.rejects(
      alerts.createRule({ name: 'x', kind: 'budget_threshold', target: { accountId: 'a' } }, who, 'req_1'),
      invalid('target.accountId'),
    );
    await assert.rejects(
      alerts.createRule({ name: 'x', kind: 'quota_low', target: { model: 'gpt' } }, who, 'req_1'),
      invalid('target.model'),
    );
    await assert.rejects(
      alerts.createRule({ name: 'x', kind: 'quota_low', threshold: 100 }, who, 'req_1'),
      invalid('threshold'),
    );
    await assert.rejects(
      alerts.createRule({ name: 'x', kind: 'quota_low', threshold: null }, who, 'req_1'),
      invalid('threshold'),
    );
    await assert.rejects(
      alerts.createRule({ name: 'x', kind: 'collection_failing', threshold: 2.5 }, who, 'req_1'),
      invalid('threshold'),
    );
    await assert.rejects(
      alerts.createRule({ name: 'x', kind: 'reauth_required', threshold: 1 }, who, 'req_1'),
      invalid('threshold'),
    );
    const made = await alerts.createRule({ name: 'Ops <ops@example.com>', kind: 'forecast_exhaustion' }, who, 'req_1');
    assert.deepEqual(
      [made.name, made.threshold, made.cooldownMinutes, made.enabled, made.target],
      ['Ops <@example.com>', 24, 60, true, {}],
    );
    const budget = await alerts.createRule({ name: 'b', kind: 'budget_threshold', threshold: null }, who, 'req_1');
    assert.equal(budget.threshold, null);
    await assert.rejects(alerts.updateRule(made.id, { threshold: 0 }, who, 'req_2'), invalid('threshold'));
    assert.equal(
      (await alerts.updateRule(made.id, { enabled: false }, who, 'req_2')).threshold,
      24,
      'a PATCH without threshold keeps it',
    );
    assert.deepEqual(
      alerts.rules().map((r) => r.id),
      [made.id, budget.id],
      'creation order',
    );
    const trail = auditRepo(env)
      .query({ limit: 10 })
      .data.map((e) => [e.action, e.resourceType]);
    assert.deepEqual(trail.slice(0, 3), [
      ['gauge-alert-rule.update', 'gauge-alert-rule'],
      ['gauge-alert-rule.create', 'gauge-alert-rule'],
      ['gauge-alert-rule.create', 'gauge-alert-rule'],
    ]);
    await alerts.removeRule(made.id, who, 'req_3');
    await alerts.removeRule(budget.id, who, 'req_3');
  });
});

describe('a quota below a rule threshold', () => {
  let ruleId: string;

  test('fires, recovers with hysteresis, and fires again only after the cooldown', async () => {
    ruleId = (
      await alerts.createRule({ name: 'low', kind: 'quota_low', threshold: 10, cooldownMinutes: 30 }, who, 'req_1')
    ).id;
    await remaining(0.5);
    await alerts.evaluate();
    const [first] = events(ruleId);
    assert.deepEqual(
      [first?.state, first?.delivery, first?.accountId, first?.providerId],
      ['firing', 'pending', 'acct_1', 'openrouter'],
    );
    clock += MIN;
    await remaining(1.4);
    await alerts.evaluate();
    assert.deepEqual(
      events(ruleId).map((e) => e.state),
      ['firing'],
      'inside the hysteresis band',
    );
    clock += MIN;
    await remaining(1.5);
    await alerts.evaluate();
    assert.deepEqual(
      events(ruleId).map((e) => [e.state, e.resolvedAt]),
      [['resolved', new Date(clock).toISOString()]],
    );
    clock += 10 * MIN;
    await remaining(0.2);
    await alerts.evaluate();
    assert.equal(events(ruleId).length, 1, 'within the cooldown');
    clock += 20 * MIN;
    await alerts.evaluate();
    assert.deepEqual(
      events(ruleId).map((e) => e.state),
      ['firing', 'resolved'],
      'a new episode, newest first',
    );
    assert.deepEqual(
      published,
      ['firing', 'resolved', 'firing'],
      'fired and resolved events are published once committed',
    );
  });

  test('events follow the state machine; delivery is recorded once; an invalid move changes nothing', async () => {
    const [open] = events(ruleId);
    clock += MIN;
    await assert.rejects(
      alerts
        .moveEvent(open!.id, { state: 'acknowledged', delivery: 'delivered' })
        .then(() => alerts.moveEvent(open!.id, { state: 'acknowledged' })),
      invalid('state', /is `acknowledged`; it can move to: resolved/),
    );
    const acked = alerts.listEvents({ ruleId }, 1, 0).data[0]!;
    assert.deepEqual(
      [acked.state, acked.acknowledgedAt, acked.delivery, acked.deliveredAt],
      ['acknowledged', new Date(clock).toISOString(), 'delivered', new Date(clock).toISOString()],
    );
    await assert.rejects(
      alerts.moveEvent(open!.id, { state: 'resolved', delivery: 'failed' }),
      invalid('delivery', /delivery is `delivered`; it cannot move any more/),
    );
    assert.equal(events(ruleId)[0]!.state, 'acknowledged', 'both moves are checked before either applies');
    const resolved = await alerts.moveEvent(open!.id, { state: 'resolved' });
    assert.deepEqual([resolved.state, resolved.resolvedAt], ['resolved', new Date(clock).toISOString()]);
    await assert.rejects(
      alerts.moveEvent(open!.id, { state: 'resolved' }),
      invalid('state', /it cannot move any more/),
    );
    await assert.rejects(
      alerts.moveEvent('aevt_nope', { state: 'resolved' }),
      (err: unknown) => err instanceof ServiceError && err.code === 'NOT_FOUND',
    );
    clock += 60 * MIN;
    await alerts.evaluate();
    assert.equal(events(ruleId).length, 2, 'resolved by a client while still low: no new event until it recovers');
  });

  test('a firing event may be resolved at once; deleting a rule deletes its events and no others', async () => {
    const other = (await alerts.createRule({ name: 'out', kind: 'quota_exhausted', cooldownMinutes: 0 }, who, 'req_1'))
      .id;
    await remaining(0);
    await alerts.evaluate();
    const [fired] = events(other);
    assert.equal((await alerts.moveEvent(fired!.id, { state: 'resolved' })).state, 'resolved');
    assert.equal(await alerts.removeRule(ruleId, who, 'req_9'), 2);
    assert.deepEqual(events(ruleId), []);
    assert.equal(events(other).length, 1);
    await assert.rejects(
      alerts.removeRule(ruleId, who, 'req_9'),
      (err: unknown) => err instanceof ServiceError && err.code === 'NOT_FOUND',
    );
    await alerts.removeRule(other, who, 'req_9');
  });

  test('nothing fires while Gauge is off', async () => {
    enabled = false;
    const id = (await alerts.createRule({ name: 'off', kind: 'quota_exhausted' }, who, 'req_1')).id;
    await alerts.evaluate();
    enabled = true;
    assert.deepEqual(events(id), []);
    await alerts.removeRule(id, who, 'req_1');
  });
});

test('a budget across two providers crossing 50/80/100 fires one event per threshold per period', async () => {
  const id = (await alerts.createRule({ name: 'budget', kind: 'budget_threshold', cooldownMinutes: 0 }, who, 'req_1'))
    .id;
  const month = '2026-11-01T00:00:00.000Z';
  const status = (crossed: number[], periodStart = month): GaugeBudgetStatus => ({
    id: 'bud_1',
    name: 'Team',
    project: null,
    scope: { providerIds: ['openai', 'anthropic'], accountIds: [] },
    amount: 100,
    currency: 'USD',
    period: 'month',
    basis: 'provider_reported',
    thresholds: [50, 80, 100],
    createdAt: month,
    updatedAt: month,
    spend: { providerReported: 0, estimated: 0, counted: 0 },
    remaining: 100,
    state: 'ok',
    periodStart,
    periodEnd: '2026-12-01T00:00:00.000Z',
    crossed,
  });
  for (const crossed of [[50], [50, 80], [50, 80], [50, 80, 100], [50, 80, 100]]) {
    budgets = [status(crossed)];
    clock += MIN;
    await alerts.evaluate();
  }
  assert.deepEqual(
    events(id).map((e) => e.dedupeKey.split('|')[2]),
    ['100', '80', '50'],
  );
  budgets = [status([50], '2026-12-01T00:00:00.000Z')];
  clock += MIN;
  await alerts.evaluate();
  assert.deepEqual(
    events(id).map((e) => [e.dedupeKey.split('|')[2], e.state]),
    [
      ['50', 'firing'],
      ['100', 'resolved'],
      ['80', 'resolved'],
      ['50', 'resolved'],
    ],
  );
  budgets = [];
});
