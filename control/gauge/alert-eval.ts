import type { GaugeProviderStatus, GaugeReading, GaugeWindow } from '../../protocol/gauge.ts';
import type { GaugeSourceState } from '../../protocol/gauge-messages.ts';
import type { AlertRuleKind, GaugeAlertRule, GaugeBudgetStatus } from '../../protocol/gauge-money.ts';
import { redactText } from '../../protocol/gauge-redact.ts';
import type { StoredAlertEvent } from '../../store/gauge-alert-repo.ts';

// The alert evaluator: pure, from cached redacted data to the events to fire and resolve. Each enabled rule
// yields subjects (an account's window, a budget's threshold, a provider, a source), each `breach`, `clear`
// or `between` (inside the hysteresis band: nothing changes). A subject's dedupe key is rule, account, window
// and reset time (a budget: threshold and period start); its scope, the key less the period, is what the
// cooldown counts per. One open event per key; after it clears, a new breach is a new episode, unless the
// kind fires once per key (a budget threshold per period, a reset per reset time).

/** Points a quota (or drift) must come back past its threshold before its event resolves. */
export const HYSTERESIS_POINTS = 5;
/** How far back the burn rate of forecast_exhaustion looks, and the shortest span it trusts. */
export const FORECAST_LOOKBACK_MS = 6 * 3_600_000;
export const FORECAST_MIN_SPAN_MS = 15 * 60_000;

const ONCE_PER_KEY: ReadonlySet<AlertRuleKind> = new Set(['budget_threshold', 'quota_reset']);
const CLOSED_INCIDENT = new Set(['resolved', 'postmortem', 'completed']);
const SUMMARY_MAX = 300;

export interface AlertSourceInput {
  id: string;
  providerId: string | null;
  state: GaugeSourceState | undefined;
}

export interface AlertInputs {
  /** The latest reading of each enabled account. */
  readings: readonly GaugeReading[];
  /** Account ID -> its history snapshots of the last hours, oldest first (quota_reset, forecast_exhaustion). */
  history: ReadonlyMap<string, readonly GaugeReading[]>;
  statuses: readonly GaugeProviderStatus[];
  /** Enabled sources and their collection state. */
  sources: readonly AlertSourceInput[];
  budgets: readonly GaugeBudgetStatus[];
}

export type AlertChange =
  | {
      kind: 'fire';
      ruleId: string;
      dedupeKey: string;
      scope: string;
      providerId: string | null;
      accountId: string | null;
      summary: string;
    }
  /** The condition cleared: an open event resolves (by the service). */
  | { kind: 'resolve'; eventId: string }
  /** The condition cleared after a client resolved the event: a later breach is a new episode. */
  | { kind: 'rearm'; eventId: string };

interface Subject {
  key: string;
  scope: string;
  providerId: string | null;
  accountId: string | null;
  status: 'breach' | 'clear' | 'between';
  summary: string;
}

const pct = (x: number) => Math.round(x * 10) / 10;

/** The share of a quota window left (0..1, below 0 when overspent), or null when the window is no quota. */
export function remainingShare(w: GaugeWindow): number | null {
  if (w.limit !== null && w.limit > 0) {
    if (w.remaining !== null) return w.remaining / w.limit;
    if (w.used !== null) return 1 - w.used / w.limit;
  }
  return w.utilization === null ? null : 1 - w.utilization;
}

function matches(rule: GaugeAlertRule, providerId: string | null, accountId: string | null): boolean {
  const t = rule.target;
  return (
    (t.providerId === undefined || t.providerId === providerId) &&
    (t.accountId === undefined || t.accountId === accountId)
  );
}

function band(breach: boolean, clear: boolean): Subject['status'] {
  return breach ? 'breach' : clear ? 'clear' : 'between';
}

// Window IDs and reset times come from collectors reading upstream answers: bounded before they join a key.
const part = (text: string) => text.slice(0, 160);

function windowSubject(
  rule: GaugeAlertRule,
  r: GaugeReading,
  w: GaugeWindow,
  status: Subject['status'],
  text: string,
  period = w.resetsAt ?? 'none',
): Subject {
  const scope = `${rule.id}|${r.accountId}|${part(w.id)}`;
  return {
    key: `${scope}|${part(period)}`,
    scope,
    providerId: r.providerId,
    accountId: r.accountId,
    status,
    summary: `${r.providerId} ${r.accountId} ${w.id}: ${text}`,
  };
}

function quotaSubjects(rule: GaugeAlertRule, inputs: AlertInputs, now: number): Subject[] {
  const out: Subject[] = [];
  for (const r of inputs.readings) {
    if (!matches(rule, r.providerId, r.accountId)) continue;
    const at = Date.parse(r.collectedAt);
    for (const w of r.windows) {
      const share = remainingShare(w);
      if (rule.kind === 'quota_reset') {
        const subject = resetSubject(rule, r, w, inputs.history.get(r.accountId) ?? [], at);
        if (subject) out.push(subject);
        continue;
      }
      if (share === null) continue;
      const left = share * 100;
      if (rule.kind === 'quota_low') {
        const t = rule.threshold!;
        out.push(
          windowSubject(
            rule,
            r,
            w,
            band(left < t, left >= Math.min(100, t + HYSTERESIS_POINTS)),
            `${pct(left)}% left, below ${t}%`,
          ),
        );
      } else if (rule.kind === 'quota_exhausted') {
        out.push(windowSubject(rule, r, w, band(left <= 0, left >= HYSTERESIS_POINTS), 'quota exhausted'));
      } else if (rule.kind === 'forecast_exhaustion') {
        const subject = forecastSubject(rule, r, w, share, inputs.history.get(r.accountId) ?? [], at, now);
        if (subject) out.push(subject);
      }
    }
  }
  return out;
}

/** A reset: the snapshot before this reading had the window resetting at a time now past. */
function resetSubject(
  rule: GaugeAlertRule,
  r: GaugeReading,
  w: GaugeWindow,
  history: readonly GaugeReading[],
  at: number,
): Subject | null {
  if (w.resetsAt === null) return null;
  const prior = history.findLast((h) => Date.parse(h.collectedAt) < at);
  const before = prior?.windows.find((x) => x.id === w.id)?.resetsAt ?? null;
  if (before === null || before === w.resetsAt || Date.parse(before) > at) return null;
  return windowSubject(rule, r, w, 'breach', `reset at ${before}; next reset ${w.resetsAt}`, before);
}

/**
 * At the burn rate since the earliest snapshot of this period in the lookback, the window runs out before it resets.
 */
function forecastSubject(
  rule: GaugeAlertRule,
  r: GaugeReading,
  w: GaugeWindow,
  share: number,
  history: readonly GaugeReading[],
  at: number,
  now: number,
): Subject | null {
  if (w.resetsAt === null || share <= 0) return null;
  const base = history
    .filter((h) => {
      const t = Date.parse(h.collectedAt);
      return t < at && t >= at - FORECAST_LOOKBACK_MS;
    })
    .map((h) => ({
      at: Date.parse(h.collectedAt),
      w: h.windows.find((x) => x.id === w.id && x.resetsAt === w.resetsAt),
    }))
    .find((h) => h.w !== undefined);
  if (!base || at - base.at < FORECAST_MIN_SPAN_MS) return null;
  const baseShare = remainingShare(base.w!);
  if (baseShare === null) return null;
  const perMs = (baseShare - share) / (at - base.at);
  const resets = Date.parse(w.resetsAt);
  const runsOut = perMs > 0 ? at + share / perMs : Infinity;
  const hours = rule.threshold!;
  const breach = runsOut < resets && runsOut - now <= hours * 3_600_000;
  return windowSubject(
    rule,
    r,
    w,
    band(breach, !breach),
    `runs out about ${new Date(Math.round(runsOut / 60_000) * 60_000).toISOString()}, before its reset at ` +
      `${w.resetsAt}`,
  );
}

function budgetSubjects(rule: GaugeAlertRule, budgets: readonly GaugeBudgetStatus[]): Subject[] {
  const out: Subject[] = [];
  for (const b of budgets) {
    if (rule.target.budgetId !== undefined && rule.target.budgetId !== b.id) continue;
    const thresholds = rule.threshold === null ? b.thresholds : [rule.threshold];
    for (const t of thresholds) {
      const reached =
        rule.threshold === null ? b.crossed.includes(t) : b.amount > 0 && (b.spend.counted / b.amount) * 100 >= t;
      const scope = `${rule.id}|budget:${b.id}|${t}`;
      out.push({
        key: `${scope}|${b.periodStart}`,
        scope,
        providerId: null,
        accountId: null,
        // Spend does not fall back within a period: the event stays until the period ends.
        status: reached ? 'breach' : 'between',
        summary:
          `budget ${b.name}: ${t}% reached (${b.spend.counted} of ${b.amount} ${b.currency}, ${b.basis}, ` +
          `${b.period} from ${b.periodStart})`,
      });
    }
  }
  return out;
}

function driftSubjects(rule: GaugeAlertRule, readings: readonly GaugeReading[]): Subject[] {
  const out: Subject[] = [];
  const t = rule.threshold!;
  for (const r of readings) {
    const s = r.spend;
    if (
      !matches(rule, r.providerId, r.accountId) ||
      s === null ||
      s.providerReported === null ||
      s.estimated === null ||
      s.providerReported <= 0
    )
      continue;
    const drift = (Math.abs(s.estimated - s.providerReported) / s.providerReported) * 100;
    const scope = `${rule.id}|${r.accountId}|spend`;
    out.push({
      key: `${scope}|${s.periodStart ?? 'none'}`,
      scope,
      providerId: r.providerId,
      accountId: r.accountId,
      status: band(drift > t, drift <= Math.max(0, t - HYSTERESIS_POINTS)),
      summary:
        `${r.providerId} ${r.accountId}: estimated ${s.estimated} and provider-reported ${s.providerReported} ` +
        `${s.currency} differ by ${pct(drift)}%`,
    });
  }
  return out;
}

function incidentSubjects(rule: GaugeAlertRule, statuses: readonly GaugeProviderStatus[]): Subject[] {
  return statuses
    .filter((s) => matches(rule, s.providerId, null))
    .map((s) => {
      const open = s.incidents.filter((i) => !CLOSED_INCIDENT.has(i.status));
      const breach = s.indicator === 'major' || s.indicator === 'critical' || open.length > 0;
      const key = `${rule.id}|provider:${s.providerId}`;
      const what = open.length > 0 ? `incident: ${open[0]!.name}` : (s.description ?? s.indicator);
      // An unreadable feed is `unknown`, never an outage, and never the end of one either.
      return {
        key,
        scope: key,
        providerId: s.providerId,
        accountId: null,
        status: s.indicator === 'unknown' && open.length === 0 ? 'between' : band(breach, !breach),
        summary: `${s.providerId} status ${s.indicator}; ${what}`,
      };
    });
}

function sourceSubjects(rule: GaugeAlertRule, sources: readonly AlertSourceInput[]): Subject[] {
  return sources
    .filter((s) => matches(rule, s.providerId, s.id) && s.state !== undefined)
    .map((s) => {
      const st = s.state!;
      const key = `${rule.id}|source:${s.id}`;
      const failing =
        rule.kind === 'collection_failing'
          ? st.consecutiveFailures >= rule.threshold!
          : st.lastOutcome === 'auth_failed';
      const text =
        rule.kind === 'collection_failing'
          ? `${st.consecutiveFailures} failed collections in a row (last: ${st.lastOutcome})`
          : 'the provider refused the credential; replace it';
      return {
        key,
        scope: key,
        providerId: s.providerId,
        accountId: s.id,
        status: band(failing, st.lastOutcome === 'ok'),
        summary: `${s.providerId ?? 'source'} ${s.id}: ${text}`,
      };
    });
}

function subjectsOf(rule: GaugeAlertRule, inputs: AlertInputs, now: number): Subject[] {
  switch (rule.kind) {
    case 'quota_low':
    case 'quota_exhausted':
    case 'quota_reset':
    case 'forecast_exhaustion':
      return quotaSubjects(rule, inputs, now);
    case 'budget_threshold':
      return budgetSubjects(rule, inputs.budgets);
    case 'spend_drift':
      return driftSubjects(rule, inputs.readings);
    case 'provider_incident':
      return incidentSubjects(rule, inputs.statuses);
    case 'collection_failing':
    case 'reauth_required':
      return sourceSubjects(rule, inputs.sources);
  }
}

/** `events`: every stored event of these rules, oldest first. */
export function evaluateAlerts(
  rules: readonly GaugeAlertRule[],
  inputs: AlertInputs,
  events: readonly StoredAlertEvent[],
  now: number,
): AlertChange[] {
  const changes: AlertChange[] = [];
  for (const rule of rules) {
    if (!rule.enabled) continue;
    const latest = new Map<string, StoredAlertEvent>();
    const lastFired = new Map<string, number>();
    for (const e of events) {
      if (e.ruleId !== rule.id) continue;
      latest.set(e.dedupeKey, e);
      lastFired.set(e.scope, Math.max(lastFired.get(e.scope) ?? -Infinity, Date.parse(e.firedAt)));
    }
    const seen = new Set<string>();
    const cleared = (e: StoredAlertEvent) =>
      changes.push(e.state === 'resolved' ? { kind: 'rearm', eventId: e.id } : { kind: 'resolve', eventId: e.id });
    for (const s of subjectsOf(rule, inputs, now)) {
      if (seen.has(s.key)) continue;
      seen.add(s.key);
      const prev = latest.get(s.key);
      if (s.status === 'clear') {
        if (prev && !prev.cleared) cleared(prev);
      } else if (s.status === 'breach') {
        if (prev && (ONCE_PER_KEY.has(rule.kind) || prev.state !== 'resolved' || !prev.cleared)) continue;
        const last = lastFired.get(s.scope);
        if (last !== undefined && now - last < rule.cooldownMinutes * 60_000) continue;
        changes.push({
          kind: 'fire',
          ruleId: rule.id,
          dedupeKey: s.key,
          scope: s.scope,
          providerId: s.providerId,
          accountId: s.accountId,
          summary: redactText(s.summary, SUMMARY_MAX),
        });
      }
    }
    // A key no subject produced any more (the window reset, the period ended, the account went): cleared.
    for (const [key, e] of latest) if (!seen.has(key) && !e.cleared) cleared(e);
  }
  return changes;
}
