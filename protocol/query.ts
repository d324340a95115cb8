import { ServiceError } from './errors.ts';

// Query parameters are validated before any storage access, and rejected rather than clamped: an
// out-of-range `limit` is an error naming the parameter, never a silently different page.

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;
const LOCAL_DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

function invalid(param: string, message: string): ServiceError {
  return new ServiceError('INVALID_REQUEST', message, { param });
}

function realDay(y: number, m: number, d: number): boolean {
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

/** Milliseconds since the epoch of an RFC 3339 date-time, or null when it is not one. */
export function parseDateTime(value: string): number | null {
  const m = RFC3339.exec(value);
  if (!m) return null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  if (!realDay(y!, mo!, d!) || h! > 23 || mi! > 59 || s! > 60) return null;
  const ms = Date.parse(value.toUpperCase());
  return Number.isNaN(ms) ? null : ms;
}

export function isLocalDay(value: string): boolean {
  const m = LOCAL_DAY.exec(value);
  return m !== null && realDay(Number(m[1]), Number(m[2]), Number(m[3]));
}

export interface QueryReader {
  string(name: string, maxLength: number): string | undefined;
  int(name: string, min: number, max: number, fallback: number): number;
  oneOf<T extends string>(name: string, values: readonly T[]): T | undefined;
  dateTime(name: string): number | undefined;
  localDay(name: string): string | undefined;
}

/** Reads a raw query string, refusing parameters the route does not know and parameters given twice. */
export function readQuery(raw: string, known: readonly string[]): QueryReader {
  const params = new URLSearchParams(raw);
  const seen = new Set<string>();
  for (const name of params.keys()) {
    if (!known.includes(name)) throw invalid(name, `Unknown query parameter \`${name}\`.`);
    if (seen.has(name)) throw invalid(name, `Query parameter \`${name}\` is given more than once.`);
    seen.add(name);
  }
  const get = (name: string) => params.get(name) ?? undefined;
  return {
    string(name, maxLength) {
      const v = get(name);
      if (v === undefined) return undefined;
      if (v.length === 0 || v.length > maxLength)
        throw invalid(name, `\`${name}\` must be 1 to ${maxLength} characters.`);
      return v;
    },
    int(name, min, max, fallback) {
      const v = get(name);
      if (v === undefined) return fallback;
      const n = /^-?\d+$/.test(v) ? Number(v) : NaN;
      if (!Number.isSafeInteger(n) || n < min || n > max) {
        throw invalid(name, `\`${name}\` must be an integer from ${min} to ${max}.`);
      }
      return n;
    },
    oneOf(name, values) {
      const v = get(name);
      if (v === undefined) return undefined;
      if (!(values as readonly string[]).includes(v))
        throw invalid(name, `\`${name}\` must be one of: ${values.join(', ')}.`);
      return v as (typeof values)[number];
    },
    dateTime(name) {
      const v = get(name);
      if (v === undefined) return undefined;
      const ms = parseDateTime(v);
      if (ms === null)
        throw invalid(name, `\`${name}\` must be an RFC 3339 date-time, for example 2026-01-31T12:00:00Z.`);
      return ms;
    },
    localDay(name) {
      const v = get(name);
      if (v === undefined) return undefined;
      if (!isLocalDay(v)) throw invalid(name, `\`${name}\` must be a day as YYYY-MM-DD.`);
      return v;
    },
  };
}
