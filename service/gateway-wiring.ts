import type { Logger } from 'pino';
import { createAdmission } from '../edge/gateway/admission.ts';
import type { GatewayDeps } from '../edge/gateway/deps.ts';
import { gatewayRoutes } from '../edge/gateway/routes.ts';
import type { RouteDef } from '../edge/http/router.ts';
import type { ModelPricing } from '../protocol/http/catalog.ts';
import type { AdmissionSource } from '../protocol/ports/limits.ts';
import { logOmittedTools } from '../workers/proxy/omitted-tools-log.ts';
import { withEmbeddedRuntime } from '../workers/runtime/runtime-pool.ts';
import type { RelayPool } from '../workers/shared/relay-sink.ts';

// The gateway's routes as every thread that serves them wires them (the main thread's gateway family and each
// edge thread, edge-worker.ts): the relay workers beside the embedded runtime, tapped for the thread's metrics
// and the omitted-tools log line, and admission against the limits the thread reads. What differs between the
// threads is what they pass: where usage, refused keys and unresolved names go.

export interface GatewayWiring
  extends Omit<GatewayDeps, 'pool' | 'admission' | 'priceOf' | 'log' | 'unresolved' | 'smart'> {
  log: Logger;
  /** This thread's relay workers. */
  relay: RelayPool;
  /** The embedded runtime's worker (on an edge thread, reached over a port to the main thread). */
  runtime: RelayPool;
  /** This thread's metrics tap on the relay (metrics/relay-tap.ts). */
  tap(pool: RelayPool): RelayPool;
  /** What this thread's admission reads (control/limits.ts on the main thread, edge-admission.ts elsewhere). */
  limits: AdmissionSource;
  priceOf(modelId: string): ModelPricing | null;
  smart: NonNullable<GatewayDeps['smart']>;
  unresolved: NonNullable<GatewayDeps['unresolved']>;
}

export function wireGateway({ relay, runtime, tap, limits, priceOf, ...deps }: GatewayWiring): RouteDef[] {
  return gatewayRoutes({
    ...deps,
    pool: logOmittedTools(tap(withEmbeddedRuntime(relay, runtime)), deps.log),
    admission: createAdmission(limits, priceOf),
    priceOf,
  });
}
