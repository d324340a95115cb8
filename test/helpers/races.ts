import assert from 'node:assert/strict';
import { auditRepo } from '../../store/audit-repo.ts';
import type { StoreEnv } from '../../store/env.ts';

// Two writes of one record that race (W4.6 item 1: a PATCH racing a DELETE brought the record back). A control
// service checks its memory and queues its LMDB transaction in the same synchronous stretch, so calling one write
// right after the other, without awaiting, queues their transactions in call order: the second starts before the
// first's commit resolves, every run.

/** Calls `first`, then at once `second`; settles both (a rejection is a result, never unhandled). */
export function race<A, B>(
  first: () => Promise<A>,
  second: () => Promise<B>,
): Promise<[PromiseSettledResult<A>, PromiseSettledResult<B>]> {
  return Promise.all([first(), second()].map((p) => p.then(ok, failed))) as Promise<
    [PromiseSettledResult<A>, PromiseSettledResult<B>]
  >;
}

const ok = <T>(value: T): PromiseFulfilledResult<T> => ({ status: 'fulfilled', value });
const failed = (reason: unknown): PromiseRejectedResult => ({ status: 'rejected', reason });

/** The write answered; its value. */
export function answered<T>(result: PromiseSettledResult<T>): T {
  if (result.status === 'rejected') throw result.reason;
  return result.value;
}

/** The write failed with the service's own NOT_FOUND (its message and param, as a read of the same key). */
export function assertNotFound(result: PromiseSettledResult<unknown>, message: RegExp, param = 'id'): void {
  assert.equal(result.status, 'rejected', 'the write that lost the race answered instead of NOT_FOUND');
  const err = (result as PromiseRejectedResult).reason as { code?: string; message?: string; param?: string };
  assert.equal(err.code, 'NOT_FOUND', String(err));
  assert.match(err.message ?? '', message);
  assert.equal(err.param, param);
}

/** The audit actions of one resource, oldest first: what was committed for it. */
export function auditedActions(env: StoreEnv, resourceId: string): string[] {
  return auditRepo(env)
    .query({ resourceId, limit: 500 })
    .data.map((e) => e.action)
    .reverse();
}
