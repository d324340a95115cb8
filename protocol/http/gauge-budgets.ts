import { Type, type Static } from '@sinclair/typebox';
import { GAUGE_LIMITS } from '../gauge-catalog.ts';
import { BUDGET_BASES, BUDGET_PERIODS } from '../gauge-money.ts';
import { compile } from '../validate.ts';
import { PROVIDER_ID_MAX } from './providers.ts';

// Gauge project budgets' HTTP bodies (docs/api.md, Gauge). Writes refuse unknown fields.

export const BUDGET_LIMITS = {
  /** Budgets one installation keeps: each GET computes every status, so the list stays small. */
  count: 200,
  /** USD; far above any real budget, low enough that sums stay exact to the nano-dollar. */
  amountMax: 1_000_000_000,
  scopeIdsMax: 50,
  thresholdsMax: 10,
  thresholdMin: 1,
  thresholdMax: 1000,
} as const;

/** Warn at half and four fifths of the amount; the last one marks the budget spent. */
export const DEFAULT_THRESHOLDS: readonly number[] = [50, 80, 100];

/** Only USD: provider-reported cost and catalog estimates are both USD, and no rate is converted. */
export const BUDGET_CURRENCIES = ['USD'] as const;

const Name = Type.String({ minLength: 1, maxLength: GAUGE_LIMITS.labelMax });
const Project = Type.Union([Type.String({ minLength: 1, maxLength: GAUGE_LIMITS.labelMax }), Type.Null()]);
const ProviderIds = Type.Array(Type.String({ minLength: 1, maxLength: PROVIDER_ID_MAX }), {
  maxItems: BUDGET_LIMITS.scopeIdsMax,
  uniqueItems: true,
});
const AccountIds = Type.Array(Type.String({ minLength: 1, maxLength: GAUGE_LIMITS.idMax }), {
  maxItems: BUDGET_LIMITS.scopeIdsMax,
  uniqueItems: true,
});
const Scope = Type.Object(
  { providerIds: Type.Optional(ProviderIds), accountIds: Type.Optional(AccountIds) },
  { additionalProperties: false },
);
const Amount = Type.Number({ exclusiveMinimum: 0, maximum: BUDGET_LIMITS.amountMax });
const Currency = Type.Union(BUDGET_CURRENCIES.map((c) => Type.Literal(c)));
const Period = Type.Union(BUDGET_PERIODS.map((p) => Type.Literal(p)));
const Basis = Type.Union(BUDGET_BASES.map((b) => Type.Literal(b)));
const Thresholds = Type.Array(
  Type.Integer({ minimum: BUDGET_LIMITS.thresholdMin, maximum: BUDGET_LIMITS.thresholdMax }),
  {
    minItems: 1,
    maxItems: BUDGET_LIMITS.thresholdsMax,
    uniqueItems: true,
  },
);

export const GaugeBudgetCreateSchema = Type.Object(
  {
    name: Name,
    project: Type.Optional(Project),
    scope: Type.Optional(Scope),
    amount: Amount,
    currency: Type.Optional(Currency),
    period: Period,
    basis: Basis,
    thresholds: Type.Optional(Thresholds),
  },
  { additionalProperties: false },
);
export type GaugeBudgetCreate = Static<typeof GaugeBudgetCreateSchema>;
export const checkGaugeBudgetCreate = compile(GaugeBudgetCreateSchema);

/** Every field optional; a scope list that is given replaces that list, one left out is kept. */
export const GaugeBudgetUpdateSchema = Type.Object(
  {
    name: Type.Optional(Name),
    project: Type.Optional(Project),
    scope: Type.Optional(Scope),
    amount: Type.Optional(Amount),
    currency: Type.Optional(Currency),
    period: Type.Optional(Period),
    basis: Type.Optional(Basis),
    thresholds: Type.Optional(Thresholds),
  },
  { additionalProperties: false },
);
export type GaugeBudgetUpdate = Static<typeof GaugeBudgetUpdateSchema>;
export const checkGaugeBudgetUpdate = compile(GaugeBudgetUpdateSchema);
