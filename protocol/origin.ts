// An origin as CORS compares it (docs/api.md, Settings), for the edge's policy and the settings that configure it.

const ORIGIN_SHAPE = /^[a-z][a-z0-9+.-]*:\/\/[^/\s?#@]+$/;

/** `https://App.example:443/` -> `https://app.example`; null when it is not an origin. */
export function normalizeOrigin(value: string): string | null {
  if (value === '*') return '*';
  const trimmed = value.trim().toLowerCase().replace(/\/$/, '');
  if (!ORIGIN_SHAPE.test(trimmed)) return null;
  if (trimmed.startsWith('http://') && trimmed.endsWith(':80')) return trimmed.slice(0, -3);
  if (trimmed.startsWith('https://') && trimmed.endsWith(':443')) return trimmed.slice(0, -4);
  return trimmed;
}
