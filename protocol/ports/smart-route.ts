import type { Actor } from '../actor.ts';
import type { EndpointFamily } from '../families.ts';
import type { PresetCreate, PresetUpdate, PresetView } from '../http/presets.ts';
import type { RoutePackCreate, RoutePackUpdate, RoutePackView } from '../http/route-packs.ts';
import type { Decision, SyntheticModel, UsablePack, UsablePreset } from '../smart-route.ts';
import { methodsOf } from './methods.ts';

// Presets and route packs as the edge reaches them: their routes, the gateway's resolution of `@preset/` and
// `@route/` names, and the signals the gateway feeds from each call (fire and forget).

export interface PresetsPort {
  list(): PresetView[] | Promise<PresetView[]>;
  get(slug: string): PresetView | Promise<PresetView>;
  /** Runs every check a create runs except the slug conflict; saves nothing. */
  validate(input: PresetCreate): void | Promise<void>;
  create(input: PresetCreate, actor: Actor, requestId: string): Promise<PresetView>;
  update(slug: string, patch: PresetUpdate, actor: Actor, requestId: string): Promise<PresetView>;
  remove(slug: string, actor: Actor, requestId: string): Promise<void>;
}

export interface RoutePacksPort {
  list(): RoutePackView[] | Promise<RoutePackView[]>;
  get(slug: string): RoutePackView | Promise<RoutePackView>;
  create(input: RoutePackCreate, actor: Actor, requestId: string): Promise<RoutePackView>;
  update(slug: string, patch: RoutePackUpdate, actor: Actor, requestId: string): Promise<RoutePackView>;
  remove(slug: string, actor: Actor, requestId: string): Promise<void>;
  /** What a request for `family` would try now; `family` defaults to the pack's first. */
  decide(slug: string, family?: EndpointFamily): Decision | Promise<Decision>;
}

/** What the gateway needs to serve `@preset/<slug>` and `@route/<slug>` names. */
export interface SmartRoutingPort {
  presets: {
    /** Null for an unknown slug and for a preset whose target cannot be routed now. */
    usable(slug: string): UsablePreset | null | Promise<UsablePreset | null>;
  };
  packs: {
    usable(slug: string): UsablePack | null | Promise<UsablePack | null>;
    decide(slug: string, family?: EndpointFamily): Decision | Promise<Decision>;
  };
  capacity: {
    /** An answer head's rate-limit headers, for the capacity strategy. */
    observeHeaders(modelId: string, headers: Readonly<Record<string, string>>): void;
    observeRateLimited(modelId: string, retryAfterSeconds: number | null): void;
  };
  latency: {
    observe(modelId: string, ms: number): void;
  };
}

/** The presets and route packs GET /v1/models lists after the catalog's models. */
export type SyntheticModels = () => readonly SyntheticModel[] | Promise<readonly SyntheticModel[]>;

export const PRESETS_METHODS = methodsOf<PresetsPort>()(['list', 'get', 'validate', 'create', 'update', 'remove']);
export const ROUTE_PACKS_METHODS = methodsOf<RoutePacksPort>()(['list', 'get', 'create', 'update', 'remove', 'decide']);
