import { Type, type Static } from '@sinclair/typebox';
import type { ErrorCode } from '../errors.ts';
import { compile } from '../validate.ts';
import { SLUG_SHAPE } from './presets.ts';

// Route packs (docs/api.md, Route packs), addressed as `@route/<slug>`: an ordered or
// scored list of routes, the failure classes that move on to the next one, and a fallback model.

export const ROUTE_PREFIX = '@route/';
export const STRATEGIES = ['ordered', 'capacity', 'cost', 'latency'] as const;
export type Strategy = (typeof STRATEGIES)[number];
export const RETRY_CLASSES = ['rate_limited', 'upstream_error', 'timeout', 'unreachable'] as const;
export type RetryClass = (typeof RETRY_CLASSES)[number];

/** Which upstream failures a pack may retry; UPSTREAM_AUTH_FAILED is absent on purpose (no route fixes a bad key). */
export const RETRY_CLASS_OF: Partial<Record<ErrorCode, RetryClass>> = {
  UPSTREAM_RATE_LIMITED: 'rate_limited',
  UPSTREAM_ERROR: 'upstream_error',
  UPSTREAM_TIMEOUT: 'timeout',
  UPSTREAM_UNREACHABLE: 'unreachable',
};

const Slug = Type.String({ pattern: SLUG_SHAPE });
const DisplayName = Type.String({ minLength: 1, maxLength: 200 });
const Model = Type.String({ minLength: 1, maxLength: 512, pattern: '^[^@]' });
const Route = Type.Object(
  {
    id: Type.String({ pattern: SLUG_SHAPE }),
    model: Model,
    weight: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  },
  { additionalProperties: false },
);
const Routes = Type.Array(Route, { minItems: 1, maxItems: 16 });
const Fallback = Type.Object({ model: Model }, { additionalProperties: false });
const RetryOn = Type.Array(Type.Union(RETRY_CLASSES.map((c) => Type.Literal(c))), {
  maxItems: RETRY_CLASSES.length,
  uniqueItems: true,
});
const MaxAttempts = Type.Integer({ minimum: 1, maximum: 16 });
const StrategyT = Type.Union(STRATEGIES.map((s) => Type.Literal(s)));

export const RoutePackCreateSchema = Type.Object(
  {
    slug: Slug,
    displayName: Type.Optional(DisplayName),
    strategy: Type.Optional(StrategyT),
    routes: Routes,
    fallback: Fallback,
    retryOn: Type.Optional(RetryOn),
    maxAttempts: Type.Optional(MaxAttempts),
  },
  { additionalProperties: false },
);
export type RoutePackCreate = Static<typeof RoutePackCreateSchema>;
export const checkRoutePackCreate = compile(RoutePackCreateSchema);

export const RoutePackUpdateSchema = Type.Object(
  {
    displayName: Type.Optional(DisplayName),
    strategy: Type.Optional(StrategyT),
    routes: Type.Optional(Routes),
    fallback: Type.Optional(Fallback),
    retryOn: Type.Optional(RetryOn),
    maxAttempts: Type.Optional(MaxAttempts),
  },
  { additionalProperties: false },
);
export type RoutePackUpdate = Static<typeof RoutePackUpdateSchema>;
export const checkRoutePackUpdate = compile(RoutePackUpdateSchema);

export interface PackRoute {
  id: string;
  model: string;
  weight: number;
}

export interface RoutePackView {
  slug: string;
  displayName: string;
  strategy: Strategy;
  routes: PackRoute[];
  fallback: { model: string };
  retryOn: RetryClass[];
  maxAttempts: number;
  createdAt: string;
  updatedAt: string;
}
