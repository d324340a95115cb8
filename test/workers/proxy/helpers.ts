import assert from 'node:assert/strict';
import { DEFAULT_TIMEOUTS, type ProviderKind } from '../../../protocol/providers.ts';
import { ServiceError, type ErrorCode } from '../../../protocol/errors.ts';
import type { ProviderTarget } from '../../../workers/proxy/providers/types.ts';
import type { RecordedRequest } from '../../fakes/http.ts';

// Shared by the proxy tests: a target for a fake, and the checks every kind must pass.

export function targetFor(
  kind: ProviderKind,
  baseUrl: string,
  overrides: Partial<ProviderTarget> = {},
): ProviderTarget {
  return {
    id: `test-${kind.replace('_', '-')}`,
    kind,
    baseUrl,
    hints: {},
    timeouts: { ...DEFAULT_TIMEOUTS },
    ...overrides,
  };
}

/**
 * The credential appears in exactly one header, with exactly the expected value, and nowhere else in the
 * request (path, query, body, other headers).
 */
export function assertCredentialOnlyIn(req: RecordedRequest, credential: string, header: string, value: string): void {
  const carriers: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] ?? '';
    if ((req.rawHeaders[i + 1] ?? '').includes(credential) || name.includes(credential))
      carriers.push(name.toLowerCase());
  }
  assert.deepEqual(carriers, [header.toLowerCase()], 'headers carrying the credential');
  assert.equal(req.headers[header.toLowerCase()], value);
  assert.equal(req.url.includes(credential), false, 'credential in the URL');
  assert.equal(req.body.includes(credential), false, 'credential in the body');
}

/** Awaits a rejection that must be a ServiceError with `code`; returns it for further checks. */
export async function rejectsWith(promise: Promise<unknown>, code: ErrorCode): Promise<ServiceError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof ServiceError, `expected a ServiceError, got ${String(err)}`);
    assert.equal(err.code, code, `${err.code}: ${err.message} ${JSON.stringify(err.details)}`);
    return err;
  }
  assert.fail(`expected ${code}, got a result`);
}

/** Nothing a client or a log could see of the error mentions the credential. */
export function assertNoCredential(err: ServiceError, credential: string): void {
  const visible = JSON.stringify({
    message: err.message,
    details: err.details,
    headers: err.headers,
    payload: err.toPayload(),
  });
  assert.equal(visible.includes(credential), false, visible);
}
