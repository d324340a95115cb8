import { pino, type DestinationStream, type Logger } from 'pino';
import type { UsageReport, UsageRoute } from '../../protocol/gateway.ts';
import type { LogTail } from './log-tail.ts';

// Structured logs on stdout, one JSON object a line. Nothing logs headers or bodies; the redaction list is
// the second line of defence for a field that one day carries a secret by mistake.
const REDACT = [
  'secret',
  'token',
  'credential',
  'authorization',
  'apiKey',
  'password',
  '*.secret',
  '*.token',
  '*.credential',
  '*.authorization',
  '*.apiKey',
  '*.password',
  'headers',
  '*.headers',
];

const BASE = { service: 'switchyard' };
const LOG_REDACTION = { paths: REDACT, censor: '[redacted]' };

// The ISO time of the current millisecond, formatted once for every line logged in it (formatting a Date
// cost more than the rest of a request line).
let isoMs = 0;
let isoText = '';
function isoNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    isoText = new Date(ms).toISOString();
  }
  return isoText;
}
const LOG_BATCH_MS = 10;
// A batch's buffer; a longer line gets one of its own size.
const BATCH_BYTES = 64 * 1024;

/** `tail` keeps the newest lines for GET /v1/logs (edge/http/log-tail.ts). */
export function createLogger(level: string = process.env.SWITCHYARD_LOG_LEVEL ?? 'info', tail?: LogTail): Logger {
  return pino(
    { level, base: BASE, timestamp: () => `,"time":"${isoNow()}"`, redact: LOG_REDACTION },
    // In this content mode the destination takes Buffers (its typings name only strings).
    batched(pino.destination({ fd: 1, sync: false, contentMode: 'buffer' }) as unknown as Flushable<Buffer>, tail),
  );
}

/**
 * An edge thread's logger: the same options and line format with the thread's number, each line handed to
 * `write`, which sends it to the control thread (in its batch of reports) to be written where its own lines
 * go (stdout, the tail of GET /v1/logs).
 */
export function createPostingLogger(level: string, edgeThread: number, write: (line: string) => void): Logger {
  const destination: Flushable<string> = { write, flush: (cb) => cb?.() };
  const base = { ...BASE, edgeThread };
  return pino({ level, base, timestamp: () => `,"time":"${isoNow()}"`, redact: LOG_REDACTION }, destination);
}

interface Flushable<T> {
  write(chunk: T): void;
  flush(cb?: (err?: Error) => void): void;
}

/**
 * Lines reach stdout in one write every LOG_BATCH_MS: under load every request logs, and a write per line
 * (or per event-loop turn) cost more than building the lines. Each line is encoded once, into the batch's
 * buffer, which the destination then writes as it is: appending lines to one string cost as much again, when
 * it was flattened, measured and encoded for the write. On exit the rest is written before pino's own exit
 * handler flushes the destination; a crash loses at most the last few milliseconds of lines.
 */
function batched(destination: Flushable<Buffer>, tail?: LogTail): Flushable<string> {
  // A new buffer per batch: the destination keeps the last one until it is written.
  let pending: Buffer | null = null;
  let used = 0;
  const drain = () => {
    if (pending === null) return;
    const bytes = pending.subarray(0, used);
    pending = null;
    used = 0;
    destination.write(bytes);
  };
  process.prependListener('exit', drain);
  return {
    write(line: string) {
      tail?.push(line);
      // UTF-8 takes at most three bytes per UTF-16 code unit.
      const most = line.length * 3;
      if (pending !== null && used + most > pending.length) drain();
      if (pending === null) {
        pending = Buffer.allocUnsafeSlow(Math.max(BATCH_BYTES, most));
        setTimeout(drain, LOG_BATCH_MS);
      }
      used += pending.write(line, used);
    },
    flush(cb) {
      drain();
      destination.flush(cb);
    },
  };
}

/** Writes a line as `log` writes its own (to stdout and the tail): an edge thread's lines, written here. */
export function lineWriter(log: Logger): (line: string) => void {
  const destination = (log as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym]!;
  return (line) => void destination.write(line);
}

/** The fields of a `usage` line; see docs/api.md. */
export interface UsageLine {
  reqId: string;
  op: string;
  providerId: string;
  modelId: string | null;
  outcome: string;
  usage: UsageReport | null;
  route?: UsageRoute;
  /** The provider key that served the call, where the provider holds keys (its ID, never the key). */
  credentialId?: string | null;
}

/** The lines written once per request. */
export interface AccessLog {
  /** The `request` line; `outcome` only for streamed answers. */
  request(
    reqId: string,
    method: string,
    route: string,
    status: number,
    outcome: string | null,
    durationMs: number,
  ): void;
  usage(line: UsageLine): void;
}

const text = (value: string | null): string => (value === null ? 'null' : JSON.stringify(value));
// As JSON.stringify prints a count: a line stays valid JSON whatever a usage report holds.
const count = (value: number | null): string =>
  typeof value === 'number' && Number.isFinite(value) ? String(value) : 'null';

/** styleB's cache-write counters, only where the protocol reports them (styleA lines carry none). */
const cacheWrites = (u: UsageReport): string =>
  (u.cacheWriteTokens === undefined ? '' : `"cacheWriteTokens":${count(u.cacheWriteTokens)},`) +
  (u.cacheWrite1hTokens === undefined ? '' : `"cacheWrite1hTokens":${count(u.cacheWrite1hTokens)},`);

/**
 * Writes the per-request lines to `log`'s destination, at its level, in pino's format, built by hand: pino's
 * generic path (serializers, hooks, the redaction walk), and even JSON.stringify of the fields, cost more than
 * the line itself. Every field here is known to be safe to log: IDs, route patterns, statuses, counts.
 */
export function createAccessLogger(log: Logger): AccessLog {
  const destination = (log as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym]!;
  // The logger's base fields as pino writes them (`,"service":"switchyard"`, and an edge thread's number).
  const base = (log as unknown as Record<symbol, string>)[pino.symbols.chindingsSym] ?? '';
  const opening = () => `{"level":30,"time":"${isoNow()}"${base},"reqId":`;
  return {
    request(reqId, method, route, status, outcome, durationMs) {
      if (!log.isLevelEnabled('info')) return;
      const outcomeField = outcome === null ? '' : `"outcome":${text(outcome)},`;
      destination.write(
        `${opening()}${text(reqId)},"method":${text(method)},"route":${text(route)},"status":${status},` +
          `${outcomeField}"durationMs":${durationMs},"msg":"request"}\n`,
      );
    },
    usage(line) {
      if (!log.isLevelEnabled('info')) return;
      const u = line.usage;
      const usage =
        u === null
          ? 'null'
          : `{"inputTokens":${count(u.inputTokens)},"outputTokens":${count(u.outputTokens)},` +
            `"cachedInputTokens":${count(u.cachedInputTokens)},` +
            `${cacheWrites(u)}"reasoningTokens":${count(u.reasoningTokens)},"totalTokens":${count(u.totalTokens)},` +
            `"costUsd":${count(u.costUsd)},"toolCalls":${JSON.stringify(u.toolCalls ?? {})}` +
            `${u.estimated === true ? ',"estimated":true' : ''}}`;
      const route =
        (line.route === undefined ? '' : `,"route":${JSON.stringify(line.route)}`) +
        (line.credentialId == null ? '' : `,"credentialId":${text(line.credentialId)}`);
      destination.write(
        `${opening()}${text(line.reqId)},"op":${text(line.op)},"providerId":${text(line.providerId)},` +
          `"modelId":${text(line.modelId)},"outcome":${text(line.outcome)},"usage":${usage}${route},"msg":"usage"}\n`,
      );
    },
  };
}
