import { isRecord } from './shape.ts';

// Token counts as the usage readers take them from an answer, shared by the proxy's usage collectors
// (workers/proxy/usage/) and the translators (workers/translate/).

/** A token count: a non-negative whole number; anything else counts as not reported. */
export function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

/** `cache_creation: {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}`: its sum and 1-hour part, or null. */
export function cacheCreationSplit(split: unknown): { total: number; hour: number } | null {
  if (!isRecord(split)) return null;
  const minutes = count(split.ephemeral_5m_input_tokens);
  const hour = count(split.ephemeral_1h_input_tokens);
  if (minutes === null && hour === null) return null;
  return { total: (minutes ?? 0) + (hour ?? 0), hour: hour ?? 0 };
}
