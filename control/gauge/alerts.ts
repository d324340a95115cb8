import type { Logger } from 'pino';
import { ServiceError } from '../../protocol/errors.ts';
import { GAUGE_LIMITS } from '../../protocol/gauge-catalog.ts';
import {
  ALERT_DELIVERY_MOVES,
  ALERT_STATE_MOVES,
  type GaugeAlertEvent,
  type GaugeAlertRule,
  type GaugeBudgetStatus,
} from '../../protocol/gauge-money.ts';
import { redactText } from '../../protocol/gauge-redact.ts';
import {
  ALERT_COOLDOWN_DEFAULT_MINUTES,
  type GaugeAlertDeliveryUpdate,
  type GaugeAlertRuleCreate,
  type GaugeAlertRuleUpdate,
} from '../../protocol/http/gauge-alerts.ts';
import { monotonicIdFactory } from '../../protocol/ids.ts';
import type { AlertEventFilter } from '../../protocol/ports/gauge.ts';
import type { AuditRepo } from '../../store/audit-repo.ts';
import type { StoreEnv } from '../../store/env.ts';
import type { GaugeAlertRepo, StoredAlertEvent } from '../../store/gauge-alert-repo.ts';
import type { GaugeDataRepo } from '../../store/gauge-data-repo.ts';
import type { GaugeSourceRepo } from '../../store/gauge-source-repo.ts';
import type { GaugeActor } from '../../workers/gauge/actor.ts';
import type { Actor } from '../actor.ts';
import { auditedCrud } from '../crud.ts';
import { createAlertRunner, DAY_MS } from './alert-runner.ts';
import { checkTarget, checkThreshold } from './alert-rules.ts';
import type { GaugeSettings } from './service.ts';
import { checkId } from './validation.ts';

// Gauge's alert rules and events on the edge: rule writes (with their audit records), the event moves a client
// makes, and the evaluation that fires and resolves events from what Gauge collected (run by alert-runner.ts).
// The clock is injected so tests move time instead of waiting for it.

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

export const ALERT_EVENTS_DEFAULT_RANGE_DAYS = 30;

const notFound = (what: string, id: string) =>
  new ServiceError('NOT_FOUND', `No Gauge alert ${what} with ID \`${id.slice(0, 160)}\`.`, { param: 'id' });
const iso = (ms: number) => new Date(ms).toISOString();

/** What a client sees of an event: the stored record less the evaluator's bookkeeping. */
export function eventView(e: StoredAlertEvent): GaugeAlertEvent {
  const { scope: _scope, cleared: _cleared, ...view } = e;
  return view;
}

export function createGaugeAlerts(deps: GaugeAlertsDeps) {
  const { env, repo, audit } = deps;
  const now = deps.now ?? Date.now;
  const ruleId = monotonicIdFactory('arule_');
  const runner = createAlertRunner({ ...deps, now, published: (e) => deps.onEvent?.(eventView(e)) });
  const quietly = runner.evaluateQuietly;
  const crud = auditedCrud({ env, audit, resourceType: 'gauge-alert-rule' });

  function mustRule(id: string): GaugeAlertRule {
    const r = repo.rule(checkId(id));
    if (!r) throw notFound('rule', id);
    return r;
  }

  return {
    evaluate: runner.evaluate,
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
      const metadata = { kind: rule.kind, targetFields: Object.keys(rule.target).sort(), enabled: rule.enabled };
      await crud.commit(rule.id, { action: 'gauge-alert-rule.create', actor, requestId, metadata }, () =>
        repo.stagePutRule(rule),
      );
      void quietly();
      return rule;
    },

    async updateRule(
      id: string,
      patch: GaugeAlertRuleUpdate,
      actor: Actor,
      requestId: string,
    ): Promise<GaugeAlertRule> {
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
      await crud.commit(
        next.id,
        { action: 'gauge-alert-rule.update', actor, requestId, metadata: { changedFields: Object.keys(patch).sort() } },
        () => {
          if (!repo.rule(current.id)) throw notFound('rule', current.id);
          repo.stagePutRule(next);
        },
      );
      void quietly();
      return next;
    },

    /** The rule and only its events; returns how many events went with it. */
    async removeRule(id: string, actor: Actor, requestId: string): Promise<number> {
      const current = mustRule(id);
      return repo.removeRule(current.id, () =>
        crud.stageAudit(current.id, {
          action: 'gauge-alert-rule.delete',
          actor,
          requestId,
          metadata: { kind: current.kind },
        }),
      );
    },

    /** Newest first; `after` inclusive and `before` exclusive on firedAt; `after` defaults to 30 days before. */
    listEvents(f: AlertEventFilter, limit: number, offset: number): { data: GaugeAlertEvent[]; hasMore: boolean } {
      const after = f.after ?? (f.before ?? now()) - ALERT_EVENTS_DEFAULT_RANGE_DAYS * DAY_MS;
      const data: GaugeAlertEvent[] = [];
      let skipped = 0;
      for (const e of repo.events(true)) {
        if (!matchesEvent(e, f, after)) continue;
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
        const moved = movedEvent(e, patch, at);
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
    start: runner.start,
    close: runner.close,
  };
}

const movesText = (moves: readonly string[]) =>
  moves.length === 0 ? 'it cannot move any more' : `it can move to: ${moves.join(', ')}`;

export type GaugeAlerts = ReturnType<typeof createGaugeAlerts>;

/** The refresh a person asks for is followed by an evaluation, so the answer's events are already there. */
export function evaluatingAfterRefresh(
  actor: Pick<GaugeActor, 'setupChanged' | 'refresh'>,
  alerts: Pick<GaugeAlerts, 'evaluateQuietly'>,
): Pick<GaugeActor, 'setupChanged' | 'refresh'> {
  return {
    setupChanged: () => actor.setupChanged(),
    async refresh(sourceIds) {
      const outcomes = await actor.refresh(sourceIds);
      await alerts.evaluateQuietly();
      return outcomes;
    },
  };
}

function matchesEvent(e: StoredAlertEvent, f: AlertEventFilter, after: number): boolean {
  const at = Date.parse(e.firedAt);
  return (
    at >= after &&
    (f.before === undefined || at < f.before) &&
    (f.ruleId === undefined || e.ruleId === f.ruleId) &&
    (f.accountId === undefined || e.accountId === f.accountId) &&
    (f.providerId === undefined || e.providerId === f.providerId) &&
    (f.state === undefined || e.state === f.state) &&
    (f.delivery === undefined || e.delivery === f.delivery)
  );
}

/** The event after both moves, each checked before either applies. */
function movedEvent(e: StoredAlertEvent, patch: GaugeAlertDeliveryUpdate, at: number): StoredAlertEvent {
  if (patch.state !== undefined && !ALERT_STATE_MOVES[e.state].includes(patch.state)) {
    throw new ServiceError(
      'INVALID_REQUEST',
      `Alert event \`${e.id}\` is \`${e.state}\`; ${movesText(ALERT_STATE_MOVES[e.state])}.`,
      { param: 'state' },
    );
  }
  if (patch.delivery !== undefined && !ALERT_DELIVERY_MOVES[e.delivery].includes(patch.delivery)) {
    throw new ServiceError(
      'INVALID_REQUEST',
      `Alert event \`${e.id}\` delivery is \`${e.delivery}\`; ${movesText(ALERT_DELIVERY_MOVES[e.delivery])}.`,
      { param: 'delivery' },
    );
  }
  const moved: StoredAlertEvent = { ...e };
  if (patch.state === 'acknowledged') moved.acknowledgedAt = iso(at);
  if (patch.state === 'resolved') moved.resolvedAt = iso(at);
  if (patch.state !== undefined) moved.state = patch.state;
  if (patch.delivery !== undefined) moved.delivery = patch.delivery;
  if (patch.delivery === 'delivered') moved.deliveredAt = iso(at);
  return moved;
}
