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
  'aborted-usage',
  'credential-redirect',
  'usage',
  'usage-mixed',
  'hardening-4xx',
  'limits-gauge',
  'limits-routes',
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

/** A `describe` per suite, which imports it: its tests, hooks and service run in this file's process. */
export function describeSuites(names: readonly string[]): void {
  for (const name of names) {
    describe(name, async () => {
      await import(`./${name}.suite.ts`);
    });
  }
}
