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

export function createLogger(level: string = process.env.SWITCHYARD_LOG_LEVEL ?? 'info'): Logger {
  return pino(
    { level, base: BASE, timestamp: pino.stdTimeFunctions.isoTime, redact: { paths: REDACT, censor: '[redacted]' } },
    perTurn(pino.destination({ fd: 1, sync: false })),
  );
}

/**
 * The lines of one event-loop turn reach stdout in one write: under load every request logs, and a write
 * per line cost more than building the lines. Nothing waits longer than the turn; on exit the rest is written
 * before pino's own exit handler flushes the destination.
 */
function perTurn(destination: DestinationStream & { flush(cb?: (err?: Error) => void): void }): DestinationStream & { flush(cb?: (err?: Error) => void): void } {
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
      if (pending === '') setImmediate(drain);
      pending += line;
    },
    flush(cb) {
      drain();
      destination.flush(cb);
    },
  };
}

/**
 * For the lines written once per request (`request`, `usage`): same destination, level and format as `log`,
 * without the redaction walk, which costs more than the line itself. Only fixed-shape lines whose every
 * field is known to be safe (IDs, route patterns, statuses, counts) may go through it.
 */
export function createAccessLogger(log: Logger): Logger {
  const destination = (log as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym]!;
  return pino({ level: log.level, base: BASE, timestamp: pino.stdTimeFunctions.isoTime }, destination);
}
