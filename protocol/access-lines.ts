import type { UsageReport, UsageRoute } from './gateway.ts';

// The text of the lines the service writes once per request (docs/api.md, Logs): built by hand in pino's
// format, because pino's generic path (serializers, hooks, the redaction walk), and even JSON.stringify of the
// fields, cost more than the line itself. Every field here is known to be safe to log: IDs, route patterns,
// statuses, counts. Pure text, so the edge and a relay worker build the same lines.

/** The fields of a `usage` line; see docs/api.md. */
export interface UsageLine {
  reqId: string;
  op: string;
  providerId: string;
  modelId: string | null;
  outcome: string;
  usage: UsageReport | null;
  route?: UsageRoute;
}

// The ISO time of the current millisecond, formatted once for every line logged in it (formatting a Date
// cost more than the rest of a request line).
let isoMs = 0;
let isoText = '';
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    isoText = new Date(ms).toISOString();
  }
  return isoText;
}

/** A line's start up to its request ID's value: level, time, and the logger's base fields as pino writes them. */
export const lineOpening = (base: string): string => `{"level":30,"time":"${isoNow()}"${base},"reqId":`;

const text = (value: string | null): string => (value === null ? 'null' : JSON.stringify(value));
// As JSON.stringify prints a count: a line stays valid JSON whatever a usage report holds.
const count = (value: number | null): string =>
  typeof value === 'number' && Number.isFinite(value) ? String(value) : 'null';

/** styleB's cache-write counters, only where the protocol reports them (styleA lines carry none). */
const cacheWrites = (u: UsageReport): string =>
  (u.cacheWriteTokens === undefined ? '' : `"cacheWriteTokens":${count(u.cacheWriteTokens)},`) +
  (u.cacheWrite1hTokens === undefined ? '' : `"cacheWrite1hTokens":${count(u.cacheWrite1hTokens)},`);

/** The `request` line; `outcome` only for streamed answers. */
export function requestLineText(
  opening: string,
  reqId: string,
  method: string,
  route: string,
  status: number,
  outcome: string | null,
  durationMs: number,
): string {
  const outcomeField = outcome === null ? '' : `"outcome":${text(outcome)},`;
  return (
    `${opening}${text(reqId)},"method":${text(method)},"route":${text(route)},"status":${status},` +
    `${outcomeField}"durationMs":${durationMs},"msg":"request"}\n`
  );
}

/** The `usage` line of a gateway call. */
export function usageLineText(opening: string, line: UsageLine): string {
  const u = line.usage;
  const usage =
    u === null
      ? 'null'
      : `{"inputTokens":${count(u.inputTokens)},"outputTokens":${count(u.outputTokens)},` +
        `"cachedInputTokens":${count(u.cachedInputTokens)},` +
        `${cacheWrites(u)}"reasoningTokens":${count(u.reasoningTokens)},"totalTokens":${count(u.totalTokens)},` +
        `"costUsd":${count(u.costUsd)},"toolCalls":${JSON.stringify(u.toolCalls ?? {})}}`;
  const route = line.route === undefined ? '' : `,"route":${JSON.stringify(line.route)}`;
  return (
    `${opening}${text(line.reqId)},"op":${text(line.op)},"providerId":${text(line.providerId)},` +
    `"modelId":${text(line.modelId)},"outcome":${text(line.outcome)},"usage":${usage}${route},"msg":"usage"}\n`
  );
}
