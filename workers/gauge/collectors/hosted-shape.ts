import type { GaugeWindow, GaugeWindowKind } from '../../../protocol/gauge.ts';
import { CollectorError } from './types.ts';

// Defensive reading of provider JSON for the hosted collectors, the UTC calendar their windows reset on, and
// the bounded pager every report endpoint goes through. A value of the wrong type is `malformed`, never
// coerced: a drifted shape must not read as a genuine zero.

export type Json = Record<string, unknown>;

export function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function malformed(provider: string, what: string): CollectorError {
  return new CollectorError('malformed', `${provider} answered with an unexpected shape (${what}).`);
}

export function record(value: unknown, provider: string, what: string): Json {
  if (!isRecord(value)) throw malformed(provider, what);
  return value;
}

/** An array of at most `max` entries: a longer one is not what the reference documents. */
export function list(value: unknown, provider: string, what: string, max: number): unknown[] {
  if (!Array.isArray(value) || value.length > max) throw malformed(provider, what);
  return value;
}

/** A finite number; absent or null when `nullable` gives null. Negative counts are refused unless allowed. */
export function count(
  value: unknown,
  provider: string,
  what: string,
  options: { nullable?: boolean; signed?: boolean } = {},
): number | null {
  if ((value === undefined || value === null) && options.nullable) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || (!options.signed && value < 0))
    throw malformed(provider, what);
  return value;
}

/** `count` for a field the reference marks required-or-zero: absent reads as 0, a wrong type still fails. */
export function countOrZero(value: unknown, provider: string, what: string): number {
  return count(value, provider, what, { nullable: true }) ?? 0;
}

/** A decimal amount given as a JSON number or a decimal string ("123.45"). */
export function decimal(value: unknown, provider: string, what: string): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && value.length <= 40 && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  throw malformed(provider, what);
}

export function bool(value: unknown): boolean {
  return value === true;
}

/** An ISO-4217 code as shown to users (upper case); anything else is refused. */
export function currency(value: unknown, provider: string): string {
  if (typeof value !== 'string' || !/^[A-Za-z]{3}$/.test(value)) throw malformed(provider, 'currency');
  return value.toUpperCase();
}

/** A date-time or date-only string re-emitted as a canonical UTC ISO string; anything else is null. */
export function isoDate(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > 64) return null;
  const text = /^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

// UTC calendar: OpenRouter documents UTC days and Monday weeks; OpenAI and Anthropic bucket in UTC.
export function dayStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
}
export function nextDay(now: Date): Date {
  return new Date(dayStart(now).getTime() + 86_400_000);
}
export function monthStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}
export function nextMonth(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}
export function nextMonday(now: Date): Date {
  const daysToMonday = (8 - now.getUTCDay()) % 7 || 7;
  return new Date(dayStart(now).getTime() + daysToMonday * 86_400_000);
}

/** A usage window; utilization is derived only when both sides are known, and kept within 0..1. */
export function usageWindow(
  id: string,
  kind: GaugeWindowKind,
  period: string | null,
  figures: { used: number | null; limit: number | null; remaining: number | null },
  resetsAt: Date | string | null,
): GaugeWindow {
  const { used, limit, remaining } = figures;
  const utilization = used !== null && limit !== null && limit > 0 ? Math.min(1, Math.max(0, used / limit)) : null;
  return {
    id,
    kind,
    period,
    used,
    limit,
    remaining,
    utilization,
    resetsAt: resetsAt instanceof Date ? resetsAt.toISOString() : resetsAt,
  };
}

/** A page cursor as sent back to the provider; an overlong or non-string one is a shape error. */
export function cursor(value: unknown, provider: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value === '' || value.length > 1024) throw malformed(provider, 'next_page');
  return value;
}

/**
 * Follows `next` through at most `maxPages` pages. A provider whose cursor never ends is refused as malformed
 * rather than followed forever.
 */
export async function eachPage(
  provider: string,
  maxPages: number,
  fetchPage: (page: string | null) => Promise<string | null>,
): Promise<void> {
  let page: string | null = null;
  for (let n = 0; n < maxPages; n++) {
    page = await fetchPage(page);
    if (page === null) return;
  }
  throw new CollectorError('malformed', `${provider}'s report did not end within ${maxPages} pages.`);
}
