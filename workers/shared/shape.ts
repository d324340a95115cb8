// The one test every body reader starts with, shared by the proxy's readers, the translators and the upstream
// error mapping.

/** A JSON object: not null, not an array. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
