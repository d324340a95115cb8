import type { Logger } from 'pino';
import type { GaugeReading } from '../../protocol/gauge.ts';
import type { GaugeAlertRule, GaugeBudgetStatus } from '../../protocol/gauge-money.ts';
import { monotonicIdFactory } from '../../protocol/ids.ts';
import type { StoreEnv } from '../../store/env.ts';
import type { GaugeAlertRepo, StoredAlertEvent } from '../../store/gauge-alert-repo.ts';
import type { GaugeDataRepo } from '../../store/gauge-data-repo.ts';
import type { GaugeSourceRepo } from '../../store/gauge-source-repo.ts';
import { evaluateAlerts, FORECAST_LOOKBACK_MS, type AlertChange, type AlertInputs } from './alert-eval.ts';
import type { GaugeSettings } from './service.ts';

// What runs the alert evaluator (alert-eval.ts) for the alert service (alerts.ts): it gathers the evaluator's
// inputs from what Gauge collected, commits the events it fires and resolves, and prunes old history.
// Evaluations run one at a time (a caller arriving during one waits for the next, which sees its writes), after
// each refresh and on a modest timer; nothing fires while Gauge is off.

export interface AlertRunnerDeps {
  env: StoreEnv;
  repo: GaugeAlertRepo;
  data: GaugeDataRepo;
  sources: GaugeSourceRepo;
  settings(): GaugeSettings;
  /** The budget statuses at `now` (budgetStatuses of control/gauge/budgets.ts). */
  budgets(now: number): GaugeBudgetStatus[];
  log: Pick<Logger, 'warn'>;
  /** An event fired or resolved, once committed. */
  published(event: StoredAlertEvent): void;
  now: () => number;
  tickMs?: number;
}

export const DAY_MS = 86_400_000;
const PRUNE_EVERY_MS = 3_600_000;
/** quota_reset compares with the snapshot an hour before; forecasts look back FORECAST_LOOKBACK_MS. */
const HISTORY_LOOKBACK_MS = FORECAST_LOOKBACK_MS + 3_600_000;

const iso = (ms: number) => new Date(ms).toISOString();

export type AlertRunner = ReturnType<typeof createAlertRunner>;

/** What the evaluator reads, from the enabled sources only. */
function inputs(
  { sources, data }: Pick<AlertRunnerDeps, 'sources' | 'data'>,
  at: number,
  rules: readonly GaugeAlertRule[],
): AlertInputs {
  const enabled = sources.all().filter((s) => s.enabled);
  const ids = new Set(enabled.map((s) => s.id));
  const history = new Map<string, GaugeReading[]>();
  if (rules.some((r) => r.kind === 'quota_reset' || r.kind === 'forecast_exhaustion')) {
    for (const row of data.history(at - HISTORY_LOOKBACK_MS, [...ids])) {
      const list = history.get(row.accountId) ?? [];
      list.push(row.reading);
      history.set(row.accountId, list);
    }
  }
  // A status kept from before its page was disabled is no news.
  const statusProviders = new Set(enabled.filter((s) => s.kind === 'status').map((s) => s.providerId));
  return {
    readings: data
      .readings()
      .filter((s) => ids.has(s.sourceId))
      .map((s) => s.reading),
    history,
    statuses: data.statuses().filter((s) => statusProviders.has(s.providerId)),
    sources: enabled.map((s) => ({ id: s.id, providerId: s.providerId, state: data.state(s.id)?.state })),
    budgets: [],
  };
}

function firingEvent(id: string, c: Extract<AlertChange, { kind: 'fire' }>, at: number): StoredAlertEvent {
  return {
    id,
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
  };
}

export function createAlertRunner(deps: AlertRunnerDeps) {
  const { env, repo, log, now } = deps;
  const eventId = monotonicIdFactory('aevt_');
  let running: Promise<void> | null = null;
  let queued: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let prunedAt = -Infinity;

  function apply(changes: AlertChange[], at: number, staged: StoredAlertEvent[]): void {
    const put = (e: StoredAlertEvent) => {
      repo.stagePutEvent(e);
      staged.push(e);
    };
    for (const c of changes) {
      if (c.kind === 'fire') {
        const rule = repo.rule(c.ruleId);
        if (!rule?.enabled) continue;
        // Read again inside the transaction: a client's write may have landed since the evaluation read.
        const last = repo.latestFor(c.dedupeKey);
        const prev = last === undefined ? undefined : repo.event(last);
        if (prev !== undefined && prev.state !== 'resolved') continue;
        put(firingEvent(eventId(at), c, at));
      } else {
        const e = repo.event(c.eventId);
        if (!e) continue;
        const resolve = c.kind === 'resolve' && e.state !== 'resolved';
        const next = { ...e, cleared: true, ...(resolve ? { state: 'resolved' as const, resolvedAt: iso(at) } : {}) };
        if (resolve) put(next);
        else repo.stagePutEvent(next);
      }
    }
  }

  async function runOnce(): Promise<void> {
    if (!deps.settings().enabled || !env.isOpen()) return;
    const at = now();
    let rules = repo.rules().filter((r) => r.enabled);
    if (rules.length > 0) {
      const input = inputs(deps, at, rules);
      if (rules.some((r) => r.kind === 'budget_threshold')) {
        try {
          input.budgets = deps.budgets(at);
        } catch (err) {
          // Without statuses a budget rule cannot tell crossed from cleared: it sits this pass out.
          log.warn(
            { err: err instanceof Error ? err.message : String(err) },
            'could not read budget statuses for alerts',
          );
          rules = rules.filter((r) => r.kind !== 'budget_threshold');
        }
      }
      const ids = new Set(rules.map((r) => r.id));
      const events = [...repo.events()].filter((e) => ids.has(e.ruleId));
      const changes = evaluateAlerts(rules, input, events, at);
      if (changes.length > 0) {
        const staged: StoredAlertEvent[] = [];
        await env.commit(() => apply(changes, at, ((staged.length = 0), staged)));
        for (const e of staged) deps.published(e);
      }
    }
    if (at - prunedAt >= PRUNE_EVERY_MS) {
      prunedAt = at;
      await repo.pruneResolved(at - deps.settings().retentionDays * DAY_MS);
    }
  }

  /** One evaluation after every write before it; concurrent callers share the queued one. */
  function evaluate(): Promise<void> {
    if (queued) return queued;
    if (running) {
      queued = running
        .catch(() => undefined)
        .then(() => {
          queued = null;
          return evaluate();
        });
      return queued;
    }
    running = runOnce().finally(() => {
      running = null;
    });
    return running;
  }

  const quietly = () =>
    evaluate().catch((err: unknown) =>
      log.warn({ err: err instanceof Error ? err.message : String(err) }, 'alert evaluation failed'),
    );

  return {
    evaluate,
    /** For triggers that must not fail their caller (a refresh, a budget write, the timer). */
    evaluateQuietly: quietly,
    /**
     * Evaluates on a modest timer while Gauge is on, besides after each refresh (asked for, or scheduled: the
     * worker says when one ended): a net for conditions that change with time alone.
     */
    start(): void {
      timer ??= setInterval(() => void quietly(), deps.tickMs ?? 60_000);
      timer.unref();
    },
    async close(): Promise<void> {
      if (timer !== null) clearInterval(timer);
      timer = null;
      await Promise.allSettled([running, queued]);
    },
  };
}
