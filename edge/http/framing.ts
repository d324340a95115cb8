// Request framing the edge checks itself on top of uWebSockets.js's parser (docs/api.md, HTTP at the edge).

const DECIMAL = /^\d{1,16}$/;

/**
 * The declared body length: a number, null when none is declared, or NaN when the header is not one decimal
 * length (a list of different values, a sign, junk). Identical repeats are one length (RFC 9110, 8.6).
 */
export function declaredLength(header: string | undefined): number | null {
  if (header === undefined) return null;
  let value: string | undefined;
  for (const part of header.split(',')) {
    const v = part.trim();
    if (!DECIMAL.test(v) || (value !== undefined && v !== value)) return NaN;
    value = v;
  }
  return value === undefined ? NaN : Number(value);
}
