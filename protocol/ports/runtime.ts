import type { Actor } from '../actor.ts';
import type { ModelPrefsView, ResidencyList, ResidencyPatch, ResidencyRow } from '../http/residency.ts';
import type { BenchmarkResult } from '../http/runtime.ts';
import type { ServiceCreate, ServiceView } from '../http/services.ts';
import type { DiscoveryAnswer } from '../runtime-discovery.ts';
import { methodsOf } from './methods.ts';

// The local runtimes as the edge reaches them: discovery, stored benchmarks, supervised services and the
// local-model scheduler's residency.

export interface RuntimeDiscoveryPort {
  read(refresh?: boolean): Promise<DiscoveryAnswer>;
}

export interface BenchmarkFilter {
  modelId?: string;
  limit: number;
  offset: number;
}

export interface BenchmarksPort {
  list(
    filter: BenchmarkFilter,
  ): { data: BenchmarkResult[]; hasMore: boolean } | Promise<{ data: BenchmarkResult[]; hasMore: boolean }>;
}

export interface ServicesPort {
  list(): Promise<ServiceView[]>;
  get(id: string): Promise<ServiceView>;
  create(input: ServiceCreate, actor: Actor, requestId: string): Promise<ServiceView>;
  remove(id: string, actor: Actor, requestId: string): Promise<ServiceView>;
}

/**
 * POST /v1/services/{id}/actions/{action} once the action is known: `stop` answers the service; `start` and
 * `restart` run as a job, answered 202 with the job, or with `wait` the service once it is healthy.
 */
export type ServiceActionRunner = (
  id: string,
  action: 'start' | 'stop' | 'restart',
  actor: Actor,
  requestId: string,
  wait: boolean,
) => Promise<{ status: number; body: unknown }>;

export const RUNTIME_DISCOVERY_METHODS = methodsOf<RuntimeDiscoveryPort>()(['read']);
export const SERVICES_METHODS = methodsOf<ServicesPort>()(['list', 'get', 'create', 'remove']);

/** One model's residency: its stored pin and keep-alive, and its row while it holds memory. */
export interface ModelResidency {
  prefs: ModelPrefsView;
  resident: ResidencyRow | null;
}

export interface ResidencyPort {
  list(): Promise<ResidencyList>;
  get(modelId: string): Promise<ModelResidency>;
  patch(modelId: string, patch: ResidencyPatch, actor: Actor, requestId: string): Promise<ModelResidency>;
}

export const RESIDENCY_METHODS = methodsOf<ResidencyPort>()(['list', 'get', 'patch']);
