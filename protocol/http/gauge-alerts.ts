import { Type, type Static } from '@sinclair/typebox';
import { GAUGE_LIMITS } from '../gauge-catalog.ts';
import { ALERT_RULE_KINDS, type GaugeAlertEvent, type GaugeAlertRule } from '../gauge-money.ts';
import { compile } from '../validate.ts';

// Gauge alert bodies (docs/api.md, Gauge). Which target fields and which
// threshold a kind takes is checked after the schema (control/gauge/alert-rules.ts), naming the field.

const Id = Type.String({ minLength: 1, maxLength: GAUGE_LIMITS.idMax });
const Name = Type.String({ minLength: 1, maxLength: GAUGE_LIMITS.labelMax });

export const GaugeAlertTargetSchema = Type.Object(
  {
    providerId: Type.Optional(Id),
    accountId: Type.Optional(Id),
    budgetId: Type.Optional(Id),
    model: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })),
  },
  { additionalProperties: false },
);

/** A week: a longer quiet time is a disabled rule. */
export const ALERT_COOLDOWN_MAX_MINUTES = 10_080;
export const ALERT_COOLDOWN_DEFAULT_MINUTES = 60;

const Threshold = Type.Union([Type.Number(), Type.Null()]);
const Cooldown = Type.Integer({ minimum: 0, maximum: ALERT_COOLDOWN_MAX_MINUTES });

export const GaugeAlertRuleCreateSchema = Type.Object(
  {
    name: Name,
    kind: Type.Union(ALERT_RULE_KINDS.map((k) => Type.Literal(k))),
    target: Type.Optional(GaugeAlertTargetSchema),
    threshold: Type.Optional(Threshold),
    enabled: Type.Optional(Type.Boolean()),
    cooldownMinutes: Type.Optional(Cooldown),
  },
  { additionalProperties: false },
);
export type GaugeAlertRuleCreate = Static<typeof GaugeAlertRuleCreateSchema>;
export const checkGaugeAlertRuleCreate = compile(GaugeAlertRuleCreateSchema);

/** The kind is fixed at creation; `target` replaces the whole target. */
export const GaugeAlertRuleUpdateSchema = Type.Object(
  {
    name: Type.Optional(Name),
    target: Type.Optional(GaugeAlertTargetSchema),
    threshold: Type.Optional(Threshold),
    enabled: Type.Optional(Type.Boolean()),
    cooldownMinutes: Type.Optional(Cooldown),
  },
  { additionalProperties: false },
);
export type GaugeAlertRuleUpdate = Static<typeof GaugeAlertRuleUpdateSchema>;
export const checkGaugeAlertRuleUpdate = compile(GaugeAlertRuleUpdateSchema);

/** A client moves the event state, records local delivery, or both at once (both checked before either applies). */
export const GaugeAlertDeliveryUpdateSchema = Type.Object(
  {
    state: Type.Optional(Type.Union([Type.Literal('acknowledged'), Type.Literal('resolved')])),
    delivery: Type.Optional(
      Type.Union([Type.Literal('delivered'), Type.Literal('failed'), Type.Literal('suppressed')]),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type GaugeAlertDeliveryUpdate = Static<typeof GaugeAlertDeliveryUpdateSchema>;
export const checkGaugeAlertDeliveryUpdate = compile(GaugeAlertDeliveryUpdateSchema);

export const GAUGE_ALERT_EVENTS_QUERY = [
  'ruleId',
  'accountId',
  'providerId',
  'state',
  'delivery',
  'after',
  'before',
  'limit',
  'offset',
] as const;

export interface GaugeAlertRuleList {
  data: GaugeAlertRule[];
}

export interface GaugeAlertEventPage {
  enabled: boolean;
  data: GaugeAlertEvent[];
  limit: number;
  offset: number;
  hasMore: boolean;
}
