import { describe } from 'node:test';

// The suites of the gateway and control families, listed once: each family file runs them with one edge thread,
// and again with two (suites-edge2-*.test.ts).

export const GATEWAY_SUITES = [
  'gateway-anthropic',
  'gateway-kinds',
  'gateway-openai',
  'gateway-safety',
  'gateway-translate',
  'responses-over-chat',
  'responses-over-messages',
  'codex-tools',
  'responses-socket',
  'key-pools',
  'slot-affinity',
  'aborted-usage',
  'credential-redirect',
  'usage',
  'usage-mixed',
  'hardening-4xx',
  'limits-gauge',
  'limits-routes',
  'request-log',
  'traces',
] as const;

export const CONTROL_SUITES = [
  'capabilities',
  'openapi',
  'metrics',
  'provider-lists',
  'secrets',
  'pairing',
  'hardware',
  'http',
  'edge-connections',
] as const;

/**
 * Of those, the suites the two-thread families run again: the ones whose behaviour depends on the thread that
 * serves (relay workers and metering per thread, usage and limits through the main thread, the drain across
 * threads, sockets, logs and metrics merged, connection rules per thread). The others check what a route, a
 * translation or a validation does, the same code on any thread: their second run cost a sixth of the suite's
 * CPU and found nothing the first run did not.
 */
export const EDGE2_GATEWAY_SUITES: readonly (typeof GATEWAY_SUITES)[number][] = [
  'gateway-openai',
  'gateway-kinds',
  'gateway-safety',
  'responses-socket',
  'key-pools',
  'slot-affinity',
  'aborted-usage',
  'credential-redirect',
  'usage',
  'limits-routes',
  'request-log',
  'traces',
];
export const EDGE2_CONTROL_SUITES: readonly (typeof CONTROL_SUITES)[number][] = [
  'metrics',
  'secrets',
  'pairing',
  'http',
  'edge-connections',
];

/** A `describe` per suite, which imports it: its tests, hooks and service run in this file's process. */
export function describeSuites(names: readonly string[]): void {
  for (const name of names) {
    describe(name, async () => {
      await import(`./${name}.suite.ts`);
    });
  }
}
