import type { Actor } from '../actor.ts';
import type { CapacityRow } from '../gauge-capacity.ts';
import type { GaugeRefreshOutcome } from '../gauge-messages.ts';
import type {
  AlertDeliveryState,
  AlertEventState,
  GaugeAlertEvent,
  GaugeAlertRule,
  GaugeBudgetStatus,
} from '../gauge-money.ts';
import type { GaugeSourceRecord } from '../gauge-sources.ts';
import type { GaugeAccountCreate, GaugeAccountUpdate, GaugeSourceUpdate } from '../http/gauge.ts';
import type { GaugeAlertDeliveryUpdate, GaugeAlertRuleCreate, GaugeAlertRuleUpdate } from '../http/gauge-alerts.ts';
import type { GaugeAuthSession, GaugeAuthSessionCreate } from '../http/gauge-auth-sessions.ts';
import type { GaugeBudgetCreate, GaugeBudgetUpdate } from '../http/gauge-budgets.ts';
import { methodsOf } from './methods.ts';

// Gauge as the edge reaches it: setup writes, the refresh gate, alerts, budgets, device-flow sessions and the
// capacity rows. What Gauge collected the routes read from the store themselves (LMDB, any thread).

export interface GaugePort {
  getAccount(id: string): GaugeSourceRecord | Promise<GaugeSourceRecord>;
  createAccount(input: GaugeAccountCreate, actor: Actor, requestId: string): Promise<GaugeSourceRecord>;
  /** `mayRedirect`: the caller may send the stored credential to a new `config.baseUrl`. */
  updateAccount(
    id: string,
    patch: GaugeAccountUpdate,
    actor: Actor,
    requestId: string,
    mayRedirect: boolean,
  ): Promise<GaugeSourceRecord>;
  removeAccount(id: string, actor: Actor, requestId: string): Promise<void>;
  updateSource(
    id: string,
    patch: GaugeSourceUpdate,
    actor: Actor,
    requestId: string,
    mayRedirect: boolean,
  ): Promise<GaugeSourceRecord>;
  /** 404 for an unknown source, 409 for Gauge off, a disabled source or a refresh already running. */
  refresh(sourceIds: string[] | undefined): Promise<GaugeRefreshOutcome[]>;
  deleteHistory(sourceId: string | undefined, actor: Actor, requestId: string): Promise<number>;
}

export interface AlertEventFilter {
  ruleId?: string;
  accountId?: string;
  providerId?: string;
  state?: AlertEventState;
  delivery?: AlertDeliveryState;
  after?: number;
  before?: number;
}

export interface GaugeAlertsPort {
  rules(): GaugeAlertRule[] | Promise<GaugeAlertRule[]>;
  createRule(input: GaugeAlertRuleCreate, actor: Actor, requestId: string): Promise<GaugeAlertRule>;
  updateRule(id: string, patch: GaugeAlertRuleUpdate, actor: Actor, requestId: string): Promise<GaugeAlertRule>;
  removeRule(id: string, actor: Actor, requestId: string): Promise<number>;
  /** Evaluates the rules now; a failure is logged, not thrown. */
  evaluateQuietly(): Promise<unknown>;
  listEvents(
    filter: AlertEventFilter,
    limit: number,
    offset: number,
  ): { data: GaugeAlertEvent[]; hasMore: boolean } | Promise<{ data: GaugeAlertEvent[]; hasMore: boolean }>;
  moveEvent(id: string, patch: GaugeAlertDeliveryUpdate): Promise<GaugeAlertEvent>;
}

export interface GaugeBudgetsPort {
  budgetStatuses(): GaugeBudgetStatus[] | Promise<GaugeBudgetStatus[]>;
  create(input: GaugeBudgetCreate, actor: Actor, requestId: string): Promise<GaugeBudgetStatus>;
  update(id: string, patch: GaugeBudgetUpdate, actor: Actor, requestId: string): Promise<GaugeBudgetStatus>;
  remove(id: string, actor: Actor, requestId: string): Promise<void>;
}

export interface GaugeAuthSessionsPort {
  create(input: GaugeAuthSessionCreate, actor: Actor, requestId: string): Promise<GaugeAuthSession>;
  get(id: string): GaugeAuthSession | Promise<GaugeAuthSession>;
  cancel(id: string): Promise<GaugeAuthSession>;
}

/** GET /v1/gauge/capacity's rows, which the recommendations rank too. */
export interface GaugeCapacityPort {
  rows(now?: number): CapacityRow[] | Promise<CapacityRow[]>;
}

export const GAUGE_METHODS = methodsOf<GaugePort>()([
  'getAccount',
  'createAccount',
  'updateAccount',
  'removeAccount',
  'updateSource',
  'refresh',
  'deleteHistory',
]);
export const GAUGE_ALERTS_METHODS = methodsOf<GaugeAlertsPort>()([
  'rules',
  'createRule',
  'updateRule',
  'removeRule',
  'evaluateQuietly',
  'listEvents',
  'moveEvent',
]);
export const GAUGE_BUDGETS_METHODS = methodsOf<GaugeBudgetsPort>()(['budgetStatuses', 'create', 'update', 'remove']);
export const GAUGE_AUTH_SESSIONS_METHODS = methodsOf<GaugeAuthSessionsPort>()(['create', 'get', 'cancel']);
