import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { evaluateAlerts, type AlertChange, type AlertInputs } from '../../../control/gauge/alert-eval.ts';
import type { GaugeProviderStatus, GaugeReading, GaugeWindow } from '../../../protocol/gauge.ts';
import type { GaugeSourceState } from '../../../protocol/gauge-messages.ts';
import type { AlertRuleKind, GaugeAlertRule, GaugeBudgetStatus } from '../../../protocol/gauge-money.ts';
import type { StoredAlertEvent } from '../../../store/gauge-alert-repo.ts';

// The evaluator on plain data: one test per rule kind, then hysteresis, cooldown, dedupe across resets, a
// client's resolve, and budget thresholds once per period across a rollover.

const T0 = Date.parse('2026-11-24T12:00:00.000Z');
const MIN = 60_000;
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();
const RESET = iso(T0 + 10 * HOUR);

function rule(kind: AlertRuleKind, over: Partial<GaugeAlertRule> = {}): GaugeAlertRule {
  return {
    id: `r_${kind}`,
    name: kind,
    kind,
    target: {},
    threshold: null,
    enabled: true,
    cooldownMinutes: 30,
    createdAt: iso(T0),
    updatedAt: iso(T0),
    ...over,
  };
}
const win = (remaining: number, over: Partial<GaugeWindow> = {}): GaugeWindow => ({
  id: 'key_limit',
  kind: 'spend',
  period: 'month',
  used: 100 - remaining,
  limit: 100,
  remaining,
  utilization: null,
  resetsAt: RESET,
  ...over,
});
function reading(windows: GaugeWindow[], at = T0, over: Partial<GaugeReading> = {}): GaugeReading {
  return {
    accountId: 'acct_1',
    providerId: 'openrouter',
    collectedAt: iso(at),
    source: 'polled',
    confidence: 'high',
    windows,
    spend: null,
    credits: null,
    ...over,
  };
}
const inputs = (over: Partial<AlertInputs> = {}): AlertInputs => ({
  readings: [],
  history: new Map(),
  statuses: [],
  sources: [],
  budgets: [],
  ...over,
});

let nextId = 1;
function eventOf(change: AlertChange, at = T0, over: Partial<StoredAlertEvent> = {}): StoredAlertEvent {
  assert.equal(change.kind, 'fire');
  const c = change as Extract<AlertChange, { kind: 'fire' }>;
  return {
    id: `e${nextId++}`,
    ruleId: c.ruleId,
    providerId: c.providerId,
    accountId: c.accountId,
    state: 'firing',
    delivery: 'pending',
    summary: c.summary,
    dedupeKey: c.dedupeKey,
    firedAt: iso(at),
    acknowledgedAt: null,
    resolvedAt: null,
    deliveredAt: null,
    scope: c.scope,
    cleared: false,
    ...over,
  };
}
const kinds = (changes: AlertChange[]) => changes.map((c) => c.kind);
/** Applies changes the way the service does, so a sequence of evaluations can be followed. */
function applied(events: StoredAlertEvent[], changes: AlertChange[], at: number): StoredAlertEvent[] {
  const out = events.map((e) => {
    const c = changes.find((x) => x.kind !== 'fire' && x.eventId === e.id);
    if (!c) return e;
    return {
      ...e,
      cleared: true,
      ...(c.kind === 'resolve' ? { state: 'resolved' as const, resolvedAt: iso(at) } : {}),
    };
  });
  return [...out, ...changes.filter((c) => c.kind === 'fire').map((c) => eventOf(c, at))];
}

describe('quota_low, with hysteresis and cooldown', () => {
  const low = rule('quota_low', { threshold: 10 });

  test('fires below the threshold once per key; the key is rule, account, window and reset time', () => {
    assert.deepEqual(
      evaluateAlerts([low], inputs({ readings: [reading([win(10)])] }), [], T0),
      [],
      'exactly at the threshold is not below it',
    );
    const fired = evaluateAlerts([low], inputs({ readings: [reading([win(4)])] }), [], T0);
    assert.equal(fired.length, 1);
    const f = fired[0] as Extract<AlertChange, { kind: 'fire' }>;
    assert.deepEqual(
      [f.dedupeKey, f.accountId, f.providerId],
      [`r_quota_low|acct_1|key_limit|${RESET}`, 'acct_1', 'openrouter'],
    );
    assert.match(f.summary, /4% left, below 10%/);
    assert.deepEqual(
      evaluateAlerts([low], inputs({ readings: [reading([win(2)])] }), [eventOf(f)], T0 + MIN),
      [],
      'an open event is not fired twice',
    );
  });

  test('resolves only once the quota is back past threshold + 5 points, fires again only after the cooldown', () => {
    let events = applied([], evaluateAlerts([low], inputs({ readings: [reading([win(4)])] }), [], T0), T0);
    const step = (remaining: number, at: number) => {
      const changes = evaluateAlerts([low], inputs({ readings: [reading([win(remaining)], at)] }), events, at);
      events = applied(events, changes, at);
      return kinds(changes);
    };
    assert.deepEqual(step(14, T0 + MIN), [], 'inside the band: still firing');
    assert.deepEqual(step(15, T0 + 2 * MIN), ['resolve']);
    assert.equal(events[0]!.state, 'resolved');
    assert.deepEqual(step(3, T0 + 10 * MIN), [], 'below again inside the 30-minute cooldown: nothing');
    assert.deepEqual(step(3, T0 + 30 * MIN), ['fire'], 'cooldown over: a new episode');
    assert.equal(events.length, 2);
  });

  test('a new reset time is a new key: the old event resolves, the new one waits for the cooldown', () => {
    const events = applied([], evaluateAlerts([low], inputs({ readings: [reading([win(4)])] }), [], T0), T0);
    const later = iso(T0 + 40 * HOUR);
    const early = evaluateAlerts(
      [low],
      inputs({ readings: [reading([win(4, { resetsAt: later })])] }),
      events,
      T0 + MIN,
    );
    assert.deepEqual(kinds(early), ['resolve']);
    const afterCooldown = evaluateAlerts(
      [low],
      inputs({ readings: [reading([win(4, { resetsAt: later })])] }),
      applied(events, early, T0 + MIN),
      T0 + 31 * MIN,
    );
    assert.deepEqual(kinds(afterCooldown), ['fire']);
  });

  test('an event a client resolved while the quota is still low stays quiet until the quota recovers', () => {
    const [fire] = evaluateAlerts([low], inputs({ readings: [reading([win(4)])] }), [], T0);
    const resolved = [eventOf(fire!, T0, { state: 'resolved', resolvedAt: iso(T0 + MIN) })];
    assert.deepEqual(evaluateAlerts([low], inputs({ readings: [reading([win(4)])] }), resolved, T0 + HOUR), []);
    assert.deepEqual(kinds(evaluateAlerts([low], inputs({ readings: [reading([win(50)])] }), resolved, T0 + HOUR)), [
      'rearm',
    ]);
  });

  test(
    'targets narrow by provider and account; a disabled rule does nothing; windows without a limit are no ' + 'quota',
    () => {
      const r = [reading([win(1)])];
      assert.deepEqual(
        evaluateAlerts(
          [rule('quota_low', { threshold: 10, target: { providerId: 'openai' } })],
          inputs({ readings: r }),
          [],
          T0,
        ),
        [],
      );
      assert.deepEqual(
        evaluateAlerts(
          [rule('quota_low', { threshold: 10, target: { accountId: 'acct_2' } })],
          inputs({ readings: r }),
          [],
          T0,
        ),
        [],
      );
      assert.deepEqual(evaluateAlerts([{ ...low, enabled: false }], inputs({ readings: r }), [], T0), []);
      const spendOnly = win(0, { limit: null, remaining: null, used: 12 });
      assert.deepEqual(evaluateAlerts([low], inputs({ readings: [reading([spendOnly])] }), [], T0), []);
    },
  );

  test('an upstream window ID or reset time of any length is bounded before it joins a key or a summary', () => {
    const [fire] = evaluateAlerts(
      [low],
      inputs({ readings: [reading([win(1, { id: 'w'.repeat(5000), resetsAt: 'r'.repeat(5000) })])] }),
      [],
      T0,
    );
    const f = fire as Extract<AlertChange, { kind: 'fire' }>;
    assert.ok(
      f.dedupeKey.length < 400 && f.scope.length < 250 && f.summary.length <= 300,
      `${f.dedupeKey.length} ${f.scope.length} ${f.summary.length}`,
    );
  });
});

test('quota_exhausted: nothing left (remaining or utilization) fires; it resolves at 5% left', () => {
  const r = rule('quota_exhausted');
  const byUtil = win(0, { limit: null, remaining: null, used: null, utilization: 1 });
  assert.deepEqual(kinds(evaluateAlerts([r], inputs({ readings: [reading([byUtil])] }), [], T0)), ['fire']);
  const [fire] = evaluateAlerts([r], inputs({ readings: [reading([win(0)])] }), [], T0);
  const open = [eventOf(fire!)];
  assert.deepEqual(evaluateAlerts([r], inputs({ readings: [reading([win(3)])] }), open, T0), []);
  assert.deepEqual(kinds(evaluateAlerts([r], inputs({ readings: [reading([win(5)])] }), open, T0)), ['resolve']);
});

test('quota_reset: a window whose reset time passed since the snapshot before fires once per reset', () => {
  const r = rule('quota_reset');
  const oldReset = iso(T0 - 10 * MIN);
  const history = new Map([['acct_1', [reading([win(2, { resetsAt: oldReset })], T0 - HOUR), reading([win(90)], T0)]]]);
  const changes = evaluateAlerts([r], inputs({ readings: [reading([win(90)])], history }), [], T0);
  assert.deepEqual(kinds(changes), ['fire']);
  assert.equal(
    (changes[0] as Extract<AlertChange, { kind: 'fire' }>).dedupeKey,
    `r_quota_reset|acct_1|key_limit|${oldReset}`,
  );
  const fired = [eventOf(changes[0]!, T0, { state: 'resolved', resolvedAt: iso(T0) })];
  assert.deepEqual(
    evaluateAlerts(
      [{ ...r, cooldownMinutes: 0 }],
      inputs({ readings: [reading([win(90)])], history }),
      fired,
      T0 + HOUR,
    ),
    [],
    'once per reset, even resolved',
  );
  const sameReset = new Map([['acct_1', [reading([win(20)], T0 - HOUR)]]]);
  assert.deepEqual(evaluateAlerts([r], inputs({ readings: [reading([win(10)])], history: sameReset }), [], T0), []);
});

test(
  'forecast_exhaustion: at the recent burn rate the window runs out before its reset, within the warning ' + 'hours',
  () => {
    // 50% left an hour ago, 40% now: 10 points an hour, out in 4 hours, reset in 10.
    const history = new Map([['acct_1', [reading([win(50)], T0 - HOUR)]]]);
    const input = inputs({ readings: [reading([win(40)])], history });
    const changes = evaluateAlerts([rule('forecast_exhaustion', { threshold: 24 })], input, [], T0);
    assert.deepEqual(kinds(changes), ['fire']);
    assert.match(
      (changes[0] as Extract<AlertChange, { kind: 'fire' }>).summary,
      /runs out about 2026-11-24T16:00:00.000Z/,
    );
    assert.deepEqual(
      evaluateAlerts([rule('forecast_exhaustion', { threshold: 2 })], input, [], T0),
      [],
      'four hours away is outside a 2-hour warning',
    );
    const slow = new Map([['acct_1', [reading([win(41)], T0 - HOUR)]]]);
    assert.deepEqual(
      evaluateAlerts(
        [rule('forecast_exhaustion', { threshold: 24 })],
        inputs({ readings: [reading([win(40)])], history: slow }),
        [],
        T0,
      ),
      [],
      'lasts past its reset',
    );
    assert.deepEqual(
      evaluateAlerts(
        [rule('forecast_exhaustion', { threshold: 24 })],
        inputs({ readings: [reading([win(40)])] }),
        [],
        T0,
      ),
      [],
      'no history, no forecast',
    );
  },
);

describe('budget_threshold', () => {
  const MONTH = iso(Date.parse('2026-11-01T00:00:00.000Z'));
  function budget(crossed: number[], periodStart = MONTH, counted = 0): GaugeBudgetStatus {
    return {
      id: 'bud_1',
      name: 'Team',
      project: null,
      scope: { providerIds: ['openai', 'anthropic'], accountIds: [] },
      amount: 100,
      currency: 'USD',
      period: 'month',
      basis: 'estimated',
      thresholds: [50, 80, 100],
      createdAt: MONTH,
      updatedAt: MONTH,
      spend: { providerReported: null, estimated: counted, counted },
      remaining: 100 - counted,
      state: crossed.length === 0 ? 'ok' : 'warning',
      periodStart,
      periodEnd: iso(Date.parse(periodStart) + 30 * 24 * HOUR),
      crossed,
    };
  }
  const r = rule('budget_threshold', { cooldownMinutes: 60 });

  test('each threshold fires exactly once per period, several at once too, and again after the rollover', () => {
    let events: StoredAlertEvent[] = [];
    const step = (b: GaugeBudgetStatus, at: number) => {
      const changes = evaluateAlerts([r], inputs({ budgets: [b] }), events, at);
      events = applied(events, changes, at);
      return changes.map((c) => (c.kind === 'fire' ? `fire ${c.dedupeKey.split('|')[2]}` : c.kind));
    };
    assert.deepEqual(step(budget([]), T0), []);
    assert.deepEqual(step(budget([50]), T0 + MIN), ['fire 50']);
    assert.deepEqual(step(budget([50]), T0 + 2 * MIN), []);
    assert.deepEqual(
      step(budget([50, 80, 100]), T0 + 3 * MIN),
      ['fire 80', 'fire 100'],
      'one jump over two thresholds: both',
    );
    events = events.map((e) => ({ ...e, state: 'resolved', resolvedAt: iso(T0 + 4 * MIN) }));
    assert.deepEqual(step(budget([50, 80, 100]), T0 + 5 * HOUR), [], 'resolved by a client: still once per period');
    const next = iso(Date.parse('2026-12-01T00:00:00.000Z'));
    assert.deepEqual(step(budget([], next), T0 + 6 * HOUR), ['rearm', 'rearm', 'rearm'], 'the old period ended');
    assert.deepEqual(step(budget([50], next), T0 + 7 * HOUR), ['fire 50'], 'a new period');
    assert.equal(events.length, 4);
  });

  test('a rule threshold of its own compares counted spend; a budgetId target narrows', () => {
    const own = rule('budget_threshold', { threshold: 75 });
    assert.deepEqual(kinds(evaluateAlerts([own], inputs({ budgets: [budget([50], MONTH, 76)] }), [], T0)), ['fire']);
    assert.deepEqual(evaluateAlerts([own], inputs({ budgets: [budget([50], MONTH, 74)] }), [], T0), []);
    assert.deepEqual(
      evaluateAlerts([{ ...r, target: { budgetId: 'bud_2' } }], inputs({ budgets: [budget([50])] }), [], T0),
      [],
    );
  });
});

test('spend_drift: provider-reported and estimated spend differ by more than the threshold percent', () => {
  const r = rule('spend_drift', { threshold: 20 });
  const drift = (estimated: number) => [
    reading([], T0, {
      spend: { providerReported: 10, estimated, currency: 'USD', periodStart: iso(T0 - 24 * HOUR), periodEnd: null },
    }),
  ];
  const [fire] = evaluateAlerts([r], inputs({ readings: drift(13) }), [], T0);
  assert.equal(fire?.kind, 'fire');
  assert.deepEqual(
    evaluateAlerts([r], inputs({ readings: drift(11.7) }), [eventOf(fire!)], T0),
    [],
    '17%: inside the band',
  );
  assert.deepEqual(kinds(evaluateAlerts([r], inputs({ readings: drift(11) }), [eventOf(fire!)], T0)), ['resolve']);
  assert.deepEqual(evaluateAlerts([r], inputs({ readings: drift(12) }), [], T0), [], 'exactly 20% is not more');
});

test('provider_incident: major or critical, or an open incident; unknown is neither an outage nor its end', () => {
  const r = rule('provider_incident');
  const status = (
    indicator: GaugeProviderStatus['indicator'],
    incidents: GaugeProviderStatus['incidents'] = [],
  ): GaugeProviderStatus => ({
    providerId: 'openai',
    indicator,
    description: null,
    components: [],
    incidents,
    observedAt: iso(T0),
  });
  assert.deepEqual(evaluateAlerts([r], inputs({ statuses: [status('minor')] }), [], T0), []);
  assert.deepEqual(
    kinds(
      evaluateAlerts(
        [r],
        inputs({
          statuses: [
            status('minor', [{ name: 'Errors on chat', status: 'investigating', impact: 'minor', updatedAt: null }]),
          ],
        }),
        [],
        T0,
      ),
    ),
    ['fire'],
  );
  const [fire] = evaluateAlerts([r], inputs({ statuses: [status('major')] }), [], T0);
  assert.equal(fire?.kind, 'fire');
  assert.deepEqual(evaluateAlerts([r], inputs({ statuses: [status('unknown')] }), [eventOf(fire!)], T0), []);
  assert.deepEqual(kinds(evaluateAlerts([r], inputs({ statuses: [status('none')] }), [eventOf(fire!)], T0)), [
    'resolve',
  ]);
});

test('collection_failing: a source failing threshold times in a row; it resolves on the next success', () => {
  const r = rule('collection_failing', { threshold: 3 });
  const state = (lastOutcome: GaugeSourceState['lastOutcome'], consecutiveFailures: number): GaugeSourceState => ({
    lastOutcome,
    lastRunAt: T0,
    lastSuccessAt: null,
    lastFailureAt: T0,
    consecutiveFailures,
    nextRunAt: null,
    retryAfterMs: null,
  });
  const src = (s: GaugeSourceState) =>
    inputs({
      sources: [
        { id: 'acct_1', providerId: 'openai', state: s },
        { id: 'service', providerId: 'service', state: undefined },
      ],
    });
  assert.deepEqual(evaluateAlerts([r], src(state('timeout', 2)), [], T0), []);
  const [fire] = evaluateAlerts([r], src(state('timeout', 3)), [], T0);
  assert.deepEqual([fire?.kind, (fire as Extract<AlertChange, { kind: 'fire' }>).accountId], ['fire', 'acct_1']);
  assert.deepEqual(kinds(evaluateAlerts([r], src(state('ok', 0)), [eventOf(fire!)], T0)), ['resolve']);
});

test('reauth_required: a refused credential fires; other failures change nothing; a success resolves', () => {
  const r = rule('reauth_required');
  const src = (lastOutcome: GaugeSourceState['lastOutcome']) =>
    inputs({
      sources: [
        {
          id: 'acct_1',
          providerId: 'openai',
          state: {
            lastOutcome,
            lastRunAt: T0,
            lastSuccessAt: null,
            lastFailureAt: T0,
            consecutiveFailures: 1,
            nextRunAt: null,
            retryAfterMs: null,
          },
        },
      ],
    });
  const [fire] = evaluateAlerts([r], src('auth_failed'), [], T0);
  assert.equal(fire?.kind, 'fire');
  assert.deepEqual(evaluateAlerts([r], src('timeout'), [eventOf(fire!)], T0), []);
  assert.deepEqual(kinds(evaluateAlerts([r], src('ok'), [eventOf(fire!)], T0)), ['resolve']);
});
