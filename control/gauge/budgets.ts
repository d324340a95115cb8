import { ServiceError } from '../../protocol/errors.ts';
import type { GaugeReading } from '../../protocol/gauge.ts';
import { GAUGE_LIMITS } from '../../protocol/gauge-catalog.ts';
import type { GaugeBudget, GaugeBudgetStatus } from '../../protocol/gauge-money.ts';
import { redactText } from '../../protocol/gauge-redact.ts';
import type { AuditMetadata } from '../../protocol/http/audit.ts';
import {
  BUDGET_LIMITS,
  DEFAULT_THRESHOLDS,
  type GaugeBudgetCreate,
  type GaugeBudgetUpdate,
} from '../../protocol/http/gauge-budgets.ts';
import { newId } from '../../protocol/ids.ts';
import { periodBounds, type PeriodBounds } from '../../protocol/periods.ts';
import type { AuditRepo } from '../../store/audit-repo.ts';
import type { StoreEnv } from '../../store/env.ts';
import type { GaugeBudgetRepo } from '../../store/gauge-budget-repo.ts';
import type { GaugeSourceRepo } from '../../store/gauge-source-repo.ts';
import type { UsageRepo } from '../../store/usage-repo.ts';
import type { Actor } from '../actor.ts';
import { auditedCrud } from '../crud.ts';
import { budgetStatus, type MeteredCost } from './budget-status.ts';
import { checkId } from './validation.ts';
import { isAccount } from '../../protocol/gauge-sources.ts';

// Gauge's project budgets on the edge: writes with their audit records, and `budgetStatuses(now)`, which the
// routes answer with and the alert evaluator reads. Budgets are setup: they are kept and answered while Gauge
// is off, from the meter's usage (which runs whatever Gauge's setting); only the part that comes from Gauge
// readings waits for Gauge to be on, as every other collected figure does.

export interface GaugeBudgetsDeps {
  env: StoreEnv;
  repo: GaugeBudgetRepo;
  audit: AuditRepo;
  usage: Pick<UsageRepo, 'breakdown'>;
  /** The latest Gauge reading of every account; only called while Gauge is on. */
  readings(): GaugeReading[];
  gaugeEnabled(): boolean;
  /** Whether a provider ID names a provider record: a typo would otherwise be a budget that never counts. */
  providerExists(id: string): boolean;
  sources: Pick<GaugeSourceRepo, 'get'>;
  /** After each committed write (the alert evaluator re-reads the statuses). */
  onChange?(): void;
  now?: () => number;
}

const bad = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });
const notFound = (id: string) =>
  new ServiceError('NOT_FOUND', `No Gauge budget with ID \`${id.slice(0, GAUGE_LIMITS.idMax)}\`.`, { param: 'id' });
// More providers than this cannot be configured in practice; the breakdown is one range scan either way.
const PROVIDER_ROWS_MAX = 100_000;

/** The metered cost per gateway provider in the days of `bounds`: one range scan of the usage aggregates. */
export function meteredByProvider(usage: Pick<UsageRepo, 'breakdown'>, bounds: PeriodBounds): Map<string, MeteredCost> {
  const rows = usage.breakdown({ from: bounds.firstDay, to: bounds.lastDay }, 'provider', PROVIDER_ROWS_MAX).data;
  return new Map(
    rows.map((r) => [r.providerId!, { providerReported: r.providerReportedCostUsd, estimated: r.estimatedCostUsd }]),
  );
}

/** Every provider and Gauge account a budget's scope names exists, and none is the service's own account. */
function checkScope(
  deps: Pick<GaugeBudgetsDeps, 'providerExists' | 'sources'>,
  scope: GaugeBudgetCreate['scope'],
): void {
  scope?.providerIds?.forEach((id, i) => {
    if (!deps.providerExists(id)) throw bad(`scope.providerIds[${i}]`, `No provider \`${id}\`; see GET /v1/providers.`);
  });
  scope?.accountIds?.forEach((id, i) => {
    const source = deps.sources.get(id);
    if (source === undefined || !isAccount(source))
      throw bad(`scope.accountIds[${i}]`, `No Gauge account \`${id}\`; see GET /v1/gauge/accounts.`);
    // Its reading is the meter's own spend, which providerIds already counts: naming it would count it twice.
    if (source.kind === 'service')
      throw bad(
        `scope.accountIds[${i}]`,
        "The `service` account is this service's metered usage; scope it with `providerIds`.",
      );
  });
}

export function createGaugeBudgets(deps: GaugeBudgetsDeps) {
  const { env, repo, audit } = deps;
  const now = deps.now ?? Date.now;
  const crud = auditedCrud<GaugeBudget>({
    env,
    audit,
    resourceType: 'gauge-budget',
    repo,
    keyOf: (b) => b.id,
    notFound,
  });

  function mustGet(id: string): GaugeBudget {
    const b = repo.get(checkId(id));
    if (!b) throw notFound(id);
    return b;
  }

  async function commit(
    budget: GaugeBudget,
    action: 'gauge-budget.create' | 'gauge-budget.update' | 'gauge-budget.delete',
    actor: Actor,
    requestId: string,
    metadata: AuditMetadata,
  ): Promise<void> {
    // Names and projects are labels: the audit keeps what kind of change it was, not the words.
    const entry = { action, actor, requestId, metadata };
    if (action === 'gauge-budget.create') await crud.create(budget, entry);
    else if (action === 'gauge-budget.update') await crud.update(budget, entry);
    else await crud.remove(budget.id, entry);
    deps.onChange?.();
  }

  /** Statuses of `budgets` at `at`; budgets of the same period share one usage scan and one read of readings. */
  function statusesAt(budgets: readonly GaugeBudget[], at: number): GaugeBudgetStatus[] {
    if (budgets.length === 0) return [];
    const readings = deps.gaugeEnabled() ? deps.readings() : [];
    const byPeriod = new Map<string, { bounds: PeriodBounds; metered: Map<string, MeteredCost> }>();
    return budgets.map((b) => {
      let p = byPeriod.get(b.period);
      if (p === undefined) {
        const bounds = periodBounds(b.period, at);
        p = { bounds, metered: meteredByProvider(deps.usage, bounds) };
        byPeriod.set(b.period, p);
      }
      return budgetStatus(b, p.bounds, p.metered, readings);
    });
  }

  /** Every budget's status at `at` (default now), in creation order: what the alert evaluator reads. */
  const budgetStatuses = (at: number = now()): GaugeBudgetStatus[] => statusesAt(repo.all(), at);
  const statusOf = (b: GaugeBudget): GaugeBudgetStatus => statusesAt([b], now())[0]!;

  return {
    budgetStatuses,

    async create(input: GaugeBudgetCreate, actor: Actor, requestId: string): Promise<GaugeBudgetStatus> {
      checkScope(deps, input.scope);
      if (repo.count() >= BUDGET_LIMITS.count)
        throw bad('body', `At most ${BUDGET_LIMITS.count} budgets can exist; delete one first.`);
      const at = now();
      const budget: GaugeBudget = {
        id: newId('bud_', at),
        name: redactText(input.name, GAUGE_LIMITS.labelMax),
        project: input.project == null ? null : redactText(input.project, GAUGE_LIMITS.labelMax),
        scope: { providerIds: [...(input.scope?.providerIds ?? [])], accountIds: [...(input.scope?.accountIds ?? [])] },
        amount: input.amount,
        currency: input.currency ?? 'USD',
        period: input.period,
        basis: input.basis,
        thresholds: [...(input.thresholds ?? DEFAULT_THRESHOLDS)].sort((a, b) => a - b),
        createdAt: new Date(at).toISOString(),
        updatedAt: new Date(at).toISOString(),
      };
      await commit(budget, 'gauge-budget.create', actor, requestId, {
        period: budget.period,
        basis: budget.basis,
        currency: budget.currency,
      });
      return statusOf(budget);
    },

    async update(id: string, patch: GaugeBudgetUpdate, actor: Actor, requestId: string): Promise<GaugeBudgetStatus> {
      const current = mustGet(id);
      checkScope(deps, patch.scope);
      const next: GaugeBudget = {
        ...current,
        name: patch.name === undefined ? current.name : redactText(patch.name, GAUGE_LIMITS.labelMax),
        project:
          patch.project === undefined
            ? current.project
            : patch.project === null
              ? null
              : redactText(patch.project, GAUGE_LIMITS.labelMax),
        scope: {
          providerIds: [...(patch.scope?.providerIds ?? current.scope.providerIds)],
          accountIds: [...(patch.scope?.accountIds ?? current.scope.accountIds)],
        },
        amount: patch.amount ?? current.amount,
        currency: patch.currency ?? current.currency,
        period: patch.period ?? current.period,
        basis: patch.basis ?? current.basis,
        thresholds: patch.thresholds === undefined ? current.thresholds : [...patch.thresholds].sort((a, b) => a - b),
        updatedAt: new Date(now()).toISOString(),
      };
      await commit(next, 'gauge-budget.update', actor, requestId, { changedFields: Object.keys(patch).sort() });
      return statusOf(next);
    },

    async remove(id: string, actor: Actor, requestId: string): Promise<void> {
      const current = mustGet(id);
      await commit(current, 'gauge-budget.delete', actor, requestId, { period: current.period, basis: current.basis });
    },
  };
}

export type GaugeBudgets = ReturnType<typeof createGaugeBudgets>;
