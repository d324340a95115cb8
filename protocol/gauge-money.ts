// Gauge's budgets and alerts as docs/api.md names them (Gauge). Pure types and constants: the budget
// service computes statuses, the alert evaluator reads them; neither imports the other.

export const BUDGET_PERIODS = ['day', 'week', 'month'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

export const BUDGET_BASES = ['provider_reported', 'estimated'] as const;
export type BudgetBasis = (typeof BUDGET_BASES)[number];

export type BudgetState = 'ok' | 'warning' | 'exceeded';

export interface GaugeBudget {
  id: string;
  name: string;
  /** A label the person chose (redacted like every Gauge label); null for none. */
  project: string | null;
  /**
   * Metered usage of these provider records (empty: every provider), plus the provider-reported spend of these
   * Gauge accounts' readings (empty: none; an account's bill may already hold the metered calls).
   */
  scope: { providerIds: string[]; accountIds: string[] };
  amount: number;
  currency: string;
  period: BudgetPeriod;
  basis: BudgetBasis;
  /** Percent of `amount`, ascending, unique, each in 1..1000. */
  thresholds: number[];
  createdAt: string;
  updatedAt: string;
}

export interface GaugeBudgetStatus extends GaugeBudget {
  /** Both figures are always reported; `counted` is the one `basis` names, nothing else decides it. */
  spend: { providerReported: number | null; estimated: number | null; counted: number };
  remaining: number;
  state: BudgetState;
  /** The current period in the machine's local time zone: [periodStart, periodEnd), ISO date-times. */
  periodStart: string;
  periodEnd: string;
  /** The thresholds `counted` has reached in this period, ascending. */
  crossed: number[];
}

export const ALERT_RULE_KINDS = [
  'quota_low',
  'quota_exhausted',
  'quota_reset',
  'forecast_exhaustion',
  'budget_threshold',
  'spend_drift',
  'provider_incident',
  'collection_failing',
  'reauth_required',
] as const;
export type AlertRuleKind = (typeof ALERT_RULE_KINDS)[number];

export interface GaugeAlertRule {
  id: string;
  name: string;
  kind: AlertRuleKind;
  target: { providerId?: string; accountId?: string; budgetId?: string; model?: string };
  /** What it means depends on `kind` (a percent of remaining quota, of a budget, of drift; hours; failures). */
  threshold: number | null;
  enabled: boolean;
  cooldownMinutes: number;
  createdAt: string;
  updatedAt: string;
}

export const ALERT_EVENT_STATES = ['firing', 'acknowledged', 'resolved'] as const;
export type AlertEventState = (typeof ALERT_EVENT_STATES)[number];

export const ALERT_DELIVERY_STATES = ['pending', 'delivered', 'failed', 'suppressed'] as const;
export type AlertDeliveryState = (typeof ALERT_DELIVERY_STATES)[number];

export interface GaugeAlertEvent {
  id: string;
  ruleId: string;
  providerId: string | null;
  accountId: string | null;
  state: AlertEventState;
  delivery: AlertDeliveryState;
  /** Redacted, bounded text a notifier may show. */
  summary: string;
  /** Rule, account, window and reset time: one event per condition episode. */
  dedupeKey: string;
  firedAt: string;
  acknowledgedAt: string | null;
  resolvedAt: string | null;
  deliveredAt: string | null;
}

/** Allowed moves; anything else is 400 INVALID_REQUEST. */
export const ALERT_STATE_MOVES: Readonly<Record<AlertEventState, readonly AlertEventState[]>> = {
  firing: ['acknowledged', 'resolved'],
  acknowledged: ['resolved'],
  resolved: [],
};
export const ALERT_DELIVERY_MOVES: Readonly<Record<AlertDeliveryState, readonly AlertDeliveryState[]>> = {
  pending: ['delivered', 'failed', 'suppressed'],
  delivered: [],
  failed: [],
  suppressed: [],
};
