import { pino, type DestinationStream, type Logger } from 'pino';
import { isoNow, lineOpening, requestLineText, usageLineText, type UsageLine } from '../../protocol/access-lines.ts';
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

/** Writes the per-request lines (protocol/access-lines.ts) to `log`'s destination, at its level. */
export function createAccessLogger(log: Logger): AccessLog {
  const destination = (log as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym]!;
  const base = logBase(log);
  return {
    request(reqId, method, route, status, outcome, durationMs) {
      if (!log.isLevelEnabled('info')) return;
      destination.write(requestLineText(lineOpening(base), reqId, method, route, status, outcome, durationMs));
    },
    usage(line) {
      if (!log.isLevelEnabled('info')) return;
      destination.write(usageLineText(lineOpening(base), line));
    },
  };
}

/** The logger's base fields as pino writes them (`,"service":"switchyard"`, and an edge thread's number). */
export function logBase(log: Logger): string {
  return (log as unknown as Record<symbol, string>)[pino.symbols.chindingsSym] ?? '';
}
