import { pino, type DestinationStream, type Logger } from 'pino';

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
const timestamp = () => `,"time":"${isoNow()}"`;
const LOG_BATCH_MS = 10;

export function createLogger(level: string = process.env.SWITCHYARD_LOG_LEVEL ?? 'info'): Logger {
  return pino(
    { level, base: BASE, timestamp, redact: { paths: REDACT, censor: '[redacted]' } },
    batched(pino.destination({ fd: 1, sync: false })),
  );
}

/**
 * Lines reach stdout in one write every LOG_BATCH_MS: under load every request logs, and a write per line
 * (or per event-loop turn) cost more than building the lines. On exit the rest is written before pino's own exit
 * handler flushes the destination; a crash loses at most the last few milliseconds of lines.
 */
function batched(destination: DestinationStream & { flush(cb?: (err?: Error) => void): void }): DestinationStream & { flush(cb?: (err?: Error) => void): void } {
  let pending = '';
  const drain = () => {
    if (pending === '') return;
    const lines = pending;
    pending = '';
    destination.write(lines);
  };
  process.prependListener('exit', drain);
  return {
    write(line: string) {
      if (pending === '') setTimeout(drain, LOG_BATCH_MS);
      pending += line;
    },
    flush(cb) {
      drain();
      destination.flush(cb);
    },
  };
}

/** The lines written once per request (`request`, `usage`). */
export interface AccessLog {
  /** One info line; `fields` is plain JSON data whose every value is safe to log. */
  info(fields: object, msg: string): void;
}

/**
 * Writes the per-request lines to `log`'s destination, at its level, in pino's format, serialized by hand:
 * pino's generic path (serializers, hooks, the redaction walk) cost more than the line itself. Only
 * fixed-shape lines whose every field is known to be safe (IDs, route patterns, statuses, counts) go here.
 */
export function createAccessLogger(log: Logger): AccessLog {
  const destination = (log as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym]!;
  const base = `,"service":${JSON.stringify(BASE.service)},`;
  return {
    info(fields, msg) {
      if (!log.isLevelEnabled('info')) return;
      const json = JSON.stringify(fields);
      const members = json.length > 2 ? json.slice(1, -1) + ',' : '';
      destination.write(`{"level":30${timestamp()}${base}${members}"msg":${JSON.stringify(msg)}}\n`);
    },
  };
}
