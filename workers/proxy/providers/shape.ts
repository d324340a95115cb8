import { ServiceError } from '../../../protocol/errors.ts';
import { isRecord } from '../../shared/shape.ts';

// Helpers for reading provider bodies: the envelope is checked strictly, single entries leniently.

export function unexpectedShape(): ServiceError {
  return new ServiceError('UPSTREAM_ERROR', 'The provider answered its model list in an unexpected shape.');
}

export function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

export function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** A positive whole count (a context window), or null. */
export function countOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : null;
}

/** An RFC 3339 timestamp as whole seconds since the epoch, or null. */
export function secondsOf(timestamp: unknown): number | null {
  if (typeof timestamp !== 'string') return null;
  const ms = Date.parse(timestamp);
  return Number.isNaN(ms) ? null : Math.floor(ms / 1000);
}

/** Lower-cased substring test for model-ID heuristics. */
export function idHas(id: string, ...needles: string[]): boolean {
  const lower = id.toLowerCase();
  return needles.some((needle) => lower.includes(needle));
}

/** An entry naming itself with a non-empty string under `key`; entries without one are skipped, not fatal. */
export function hasName<K extends string>(
  entry: unknown,
  key: K,
): entry is Record<string, unknown> & Record<K, string> {
  return isRecord(entry) && typeof entry[key] === 'string' && entry[key] !== '';
}
