import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { GaugeFailureCode } from '../../../../protocol/gauge.ts';
import { CollectorError, type CollectContext } from '../../../../workers/gauge/collectors/types.ts';

// The context a collector gets from the gauge actor, built by hand, and the checks every collector's failure
// tests share: the code, and no secret (credential, body text, provider-side ID) in the message.

export const NOW = new Date('2026-11-24T15:00:00.000Z');

export function context(options: {
  credential: string | null;
  baseUrl: string;
  signal?: AbortSignal;
  now?: Date;
  config?: Record<string, unknown>;
}): CollectContext {
  return {
    accountId: 'acct_local_1',
    credential: options.credential,
    config: { baseUrl: options.baseUrl, ...options.config },
    signal: options.signal ?? new AbortController().signal,
    now: () => options.now ?? NOW,
    state: null,
  };
}

export async function rejectsWith(
  promise: Promise<unknown>,
  code: GaugeFailureCode,
  secrets: string[],
): Promise<CollectorError> {
  let caught: unknown;
  try {
    await promise;
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof CollectorError, `expected a CollectorError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  for (const secret of secrets)
    assert.ok(!caught.message.includes(secret), `message leaks "${secret}": ${caught.message}`);
  return caught;
}

/** A loopback port with nothing listening on it: bound, read, closed. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  assert.ok(address !== null && typeof address === 'object');
  return address.port;
}

export const unixSeconds = (iso: string): number => Date.parse(iso) / 1000;
