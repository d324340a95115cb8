import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import { presetRepo } from '../store/preset-repo.ts';
import { routePackRepo } from '../store/route-pack-repo.ts';
import { createCapacityTracker, type CapacitySignal, type CapacityTracker } from '../control/capacity.ts';
import type { CatalogService } from '../control/catalog-service.ts';
import { createPresetService, type PresetService } from '../control/presets/preset-service.ts';
import type { RouteDef } from '../edge/http/router.ts';
import { presetRoutes } from '../edge/routes/presets.ts';
import { routePackRoutes } from '../edge/routes/route-packs.ts';
import { syntheticModels, type SyntheticModel } from '../control/smart-route/discovery.ts';
import { createLatencyTracker, type LatencyTracker } from '../control/smart-route/latency.ts';
import { createRoutePackService, type RoutePackService } from '../control/smart-route/pack-service.ts';
import {
  PRESETS_METHODS,
  ROUTE_PACKS_METHODS,
  type PresetsPort,
  type RoutePacksPort,
} from '../protocol/ports/smart-route.ts';
import type { ControlChannel } from './control-channel.ts';

/** Presets, route packs and the signals their strategies read: what the gateway's `@` names resolve through. */
export interface SmartRouting {
  presets: PresetService;
  packs: RoutePackService;
  capacity: CapacityTracker;
  latency: LatencyTracker;
}

// One call for the composition root: presets, route packs, their signals, routes and discovery entries.
export function createSmartRouting(deps: {
  env: StoreEnv;
  audit: AuditRepo;
  catalog: CatalogService;
  /** What the capacity strategy reads, built over the live tracker (Gauge adds its polled readings). */
  capacitySignal?: (live: CapacityTracker) => CapacitySignal;
  /** How the routes reach the preset and route-pack services; they call them directly without one. */
  control?: ControlChannel;
}): {
  smart: SmartRouting;
  routes: RouteDef[];
  synthetic(): SyntheticModel[];
} {
  const { env, audit, catalog } = deps;
  const capacity = createCapacityTracker();
  const latency = createLatencyTracker();
  const current = () => catalog.current();
  const presets = createPresetService({ env, presets: presetRepo(env), audit, catalog: current });
  const packs = createRoutePackService({
    env,
    packs: routePackRepo(env),
    audit,
    catalog: current,
    signals: { capacity: deps.capacitySignal?.(capacity) ?? capacity, latency },
  });
  return {
    smart: { presets, packs, capacity, latency },
    routes: [
      ...presetRoutes(deps.control?.port<PresetsPort>('presets', presets, PRESETS_METHODS) ?? presets),
      ...routePackRoutes(deps.control?.port<RoutePacksPort>('route-packs', packs, ROUTE_PACKS_METHODS) ?? packs),
    ],
    synthetic: () => syntheticModels(presets, packs),
  };
}
