import type { Logger } from 'pino';
import { ServiceError } from '../../protocol/errors.ts';
import { GAUGE_LIMITS } from '../../protocol/gauge-catalog.ts';
import type { GaugeReading } from '../../protocol/gauge.ts';
import {
  ALERT_DELIVERY_MOVES,
  ALERT_STATE_MOVES,
  type GaugeAlertEvent,
  type GaugeAlertRule,
  type GaugeBudgetStatus,
} from '../../protocol/gauge-money.ts';
import { redactText } from '../../protocol/gauge-redact.ts';
import type { AuditAction, AuditMetadata } from '../../protocol/http/audit.ts';
import { ALERT_COOLDOWN_DEFAULT_MINUTES, type GaugeAlertDeliveryUpdate, type GaugeAlertRuleCreate, type GaugeAlertRuleUpdate } from '../../protocol/http/gauge-alerts.ts';
import { monotonicIdFactory } from '../../protocol/ids.ts';
import type { AlertEventFilter } from '../../protocol/ports/gauge.ts';
import type { AuditRepo } from '../../store/audit-repo.ts';
import type { StoreEnv } from '../../store/env.ts';
import type { GaugeAlertRepo, StoredAlertEvent } from '../../store/gauge-alert-repo.ts';
import type { GaugeDataRepo } from '../../store/gauge-data-repo.ts';
import type { GaugeSourceRepo } from '../../store/gauge-source-repo.ts';
import type { GaugeActor } from '../../workers/gauge/actor.ts';
import type { Actor } from '../actor.ts';
import { evaluateAlerts, FORECAST_LOOKBACK_MS, type AlertChange, type AlertInputs } from './alert-eval.ts';
import { checkTarget, checkThreshold } from './alert-rules.ts';
import type { GaugeSettings } from './service.ts';
import { checkId } from './validation.ts';

// Gauge's alert rules and events on the edge: rule writes (with their audit records), the event moves a client
// makes, and the evaluation that fires and resolves events from what Gauge collected. Evaluations run one at a
// time (a caller arriving during one waits for the next, which sees its writes); nothing fires while Gauge is
// off. The clock is injected so tests move time instead of waiting for it.

export interface GaugeAlertsDeps {
  env: StoreEnv;
  repo: GaugeAlertRepo;
  data: GaugeDataRepo;
  sources: GaugeSourceRepo;
  audit: AuditRepo;
  settings(): GaugeSettings;
  /** The budget statuses at `now` (budgetStatuses of control/gauge/budgets.ts). */
  budgets(now: number): GaugeBudgetStatus[];
  log: Pick<Logger, 'warn'>;
  /** An event fired, resolved or moved (committed): published as `gauge.alert` on the event bus. */
  onEvent?(event: GaugeAlertEvent): void;
  now?: () => number;
  tickMs?: number;
}

export type { AlertEventFilter };

const DAY_MS = 86_400_000;
const PRUNE_EVERY_MS = 3_600_000;
/** quota_reset compares with the snapshot an hour before; forecasts look back FORECAST_LOOKBACK_MS. */
const HISTORY_LOOKBACK_MS = FORECAST_LOOKBACK_MS + 3_600_000;
export const ALERT_EVENTS_DEFAULT_RANGE_DAYS = 30;

const notFound = (what: string, id: string) => new ServiceError('NOT_FOUND', `No Gauge alert ${what} with ID \`${id.slice(0, 160)}\`.`, { param: 'id' });
const iso = (ms: number) => new Date(ms).toISOString();

/** What a client sees of an event: the stored record less the evaluator's bookkeeping. */
export function eventView(e: StoredAlertEvent): GaugeAlertEvent {
  const { scope: _scope, cleared: _cleared, ...view } = e;
  return view;
}

export function createGaugeAlerts(deps: GaugeAlertsDeps) {
  const { env, repo, data, sources, audit, log } = deps;
  const now = deps.now ?? Date.now;
  const ruleId = monotonicIdFactory('arule_');
  const eventId = monotonicIdFactory('aevt_');
  let running: Promise<void> | null = null;
  let queued: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let prunedAt = -Infinity;

  function mustRule(id: string): GaugeAlertRule {
    const r = repo.rule(checkId(id));
    if (!r) throw notFound('rule', id);
    return r;
  }

  function stageAudit(action: AuditAction, id: string, actor: Actor, requestId: string, metadata: AuditMetadata): void {
    audit.stageAppend({ action, resourceType: 'gauge-alert-rule', resourceId: id, ...actor, requestId, metadata });
  }

  function inputs(at: number, rules: readonly GaugeAlertRule[]): AlertInputs {
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
      readings: data.readings().filter((s) => ids.has(s.sourceId)).map((s) => s.reading),
      history,
      statuses: data.statuses().filter((s) => statusProviders.has(s.providerId)),
      sources: enabled.map((s) => ({ id: s.id, providerId: s.providerId, state: data.state(s.id)?.state })),
      budgets: [],
    };
  }

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
        put({
          id: eventId(at),
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
        });
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
      const input = inputs(at, rules);
      if (rules.some((r) => r.kind === 'budget_threshold')) {
        try {
          input.budgets = deps.budgets(at);
        } catch (err) {
          // Without statuses a budget rule cannot tell crossed from cleared: it sits this pass out.
          log.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not read budget statuses for alerts');
          rules = rules.filter((r) => r.kind !== 'budget_threshold');
        }
      }
      const ids = new Set(rules.map((r) => r.id));
      const events = [...repo.events()].filter((e) => ids.has(e.ruleId));
      const changes = evaluateAlerts(rules, input, events, at);
      if (changes.length > 0) {
        const staged: StoredAlertEvent[] = [];
        await env.commit(() => apply(changes, at, (staged.length = 0, staged)));
        for (const e of staged) deps.onEvent?.(eventView(e));
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
    evaluate().catch((err: unknown) => log.warn({ err: err instanceof Error ? err.message : String(err) }, 'alert evaluation failed'));

  return {
    evaluate,
    /** For triggers that must not fail their caller (a refresh, a budget write, the timer). */
    evaluateQuietly: quietly,
    rules: () => repo.rules(),

    async createRule(input: GaugeAlertRuleCreate, actor: Actor, requestId: string): Promise<GaugeAlertRule> {
      const at = now();
      const rule: GaugeAlertRule = {
        id: ruleId(at),
        name: redactText(input.name, GAUGE_LIMITS.labelMax),
        kind: input.kind,
        target: checkTarget(input.kind, input.target),
        threshold: checkThreshold(input.kind, input.threshold),
        enabled: input.enabled ?? true,
        cooldownMinutes: input.cooldownMinutes ?? ALERT_COOLDOWN_DEFAULT_MINUTES,
        createdAt: iso(at),
        updatedAt: iso(at),
      };
      await env.commit(() => {
        repo.stagePutRule(rule);
        stageAudit('gauge-alert-rule.create', rule.id, actor, requestId, { kind: rule.kind, targetFields: Object.keys(rule.target).sort(), enabled: rule.enabled });
      });
      void quietly();
      return rule;
    },

    async updateRule(id: string, patch: GaugeAlertRuleUpdate, actor: Actor, requestId: string): Promise<GaugeAlertRule> {
      const current = mustRule(id);
      const next: GaugeAlertRule = {
        ...current,
        name: patch.name === undefined ? current.name : redactText(patch.name, GAUGE_LIMITS.labelMax),
        target: patch.target === undefined ? current.target : checkTarget(current.kind, patch.target),
        threshold: checkThreshold(current.kind, patch.threshold, current.threshold),
        enabled: patch.enabled ?? current.enabled,
        cooldownMinutes: patch.cooldownMinutes ?? current.cooldownMinutes,
        updatedAt: iso(now()),
      };
      await env.commit(() => {
        if (!repo.rule(current.id)) throw notFound('rule', current.id);
        repo.stagePutRule(next);
        stageAudit('gauge-alert-rule.update', next.id, actor, requestId, { changedFields: Object.keys(patch).sort() });
      });
      void quietly();
      return next;
    },

    /** The rule and only its events; returns how many events went with it. */
    async removeRule(id: string, actor: Actor, requestId: string): Promise<number> {
      const current = mustRule(id);
      return repo.removeRule(current.id, () => stageAudit('gauge-alert-rule.delete', current.id, actor, requestId, { kind: current.kind }));
    },

    /** Newest first; `after` inclusive and `before` exclusive on firedAt; `after` defaults to 30 days before. */
    listEvents(f: AlertEventFilter, limit: number, offset: number): { data: GaugeAlertEvent[]; hasMore: boolean } {
      const after = f.after ?? (f.before ?? now()) - ALERT_EVENTS_DEFAULT_RANGE_DAYS * DAY_MS;
      const data: GaugeAlertEvent[] = [];
      let skipped = 0;
      for (const e of repo.events(true)) {
        const at = Date.parse(e.firedAt);
        const match =
          at >= after &&
          (f.before === undefined || at < f.before) &&
          (f.ruleId === undefined || e.ruleId === f.ruleId) &&
          (f.accountId === undefined || e.accountId === f.accountId) &&
          (f.providerId === undefined || e.providerId === f.providerId) &&
          (f.state === undefined || e.state === f.state) &&
          (f.delivery === undefined || e.delivery === f.delivery);
        if (!match) continue;
        if (skipped < offset) skipped++;
        else if (data.length === limit) return { data, hasMore: true };
        else data.push(eventView(e));
      }
      return { data, hasMore: false };
    },

    /** Both moves are checked before either applies; an invalid one is 400 naming the current state. */
    async moveEvent(id: string, patch: GaugeAlertDeliveryUpdate): Promise<GaugeAlertEvent> {
      checkId(id);
      const at = now();
      const next = await env.commit(() => {
        const e = repo.event(id);
        if (!e) throw notFound('event', id);
        if (patch.state !== undefined && !ALERT_STATE_MOVES[e.state].includes(patch.state)) {
          throw new ServiceError('INVALID_REQUEST', `Alert event \`${e.id}\` is \`${e.state}\`; ${movesText(ALERT_STATE_MOVES[e.state])}.`, { param: 'state' });
        }
        if (patch.delivery !== undefined && !ALERT_DELIVERY_MOVES[e.delivery].includes(patch.delivery)) {
          throw new ServiceError('INVALID_REQUEST', `Alert event \`${e.id}\` delivery is \`${e.delivery}\`; ${movesText(ALERT_DELIVERY_MOVES[e.delivery])}.`, { param: 'delivery' });
        }
        const moved: StoredAlertEvent = { ...e };
        if (patch.state === 'acknowledged') moved.acknowledgedAt = iso(at);
        if (patch.state === 'resolved') moved.resolvedAt = iso(at);
        if (patch.state !== undefined) moved.state = patch.state;
        if (patch.delivery !== undefined) moved.delivery = patch.delivery;
        if (patch.delivery === 'delivered') moved.deliveredAt = iso(at);
        repo.stagePutEvent(moved);
        return moved;
      });
      deps.onEvent?.(eventView(next));
      return eventView(next);
    },

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

const movesText = (moves: readonly string[]) => (moves.length === 0 ? 'it cannot move any more' : `it can move to: ${moves.join(', ')}`);

export type GaugeAlerts = ReturnType<typeof createGaugeAlerts>;

/** The refresh a person asks for is followed by an evaluation, so the answer's events are already there. */
export function evaluatingAfterRefresh(actor: Pick<GaugeActor, 'setupChanged' | 'refresh'>, alerts: Pick<GaugeAlerts, 'evaluateQuietly'>): Pick<GaugeActor, 'setupChanged' | 'refresh'> {
  return {
    setupChanged: () => actor.setupChanged(),
    async refresh(sourceIds) {
      const outcomes = await actor.refresh(sourceIds);
      await alerts.evaluateQuietly();
      return outcomes;
    },
  };
}
