import { pino, type Logger } from 'pino';

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

export function createLogger(level: string = process.env.SWITCHYARD_LOG_LEVEL ?? 'info'): Logger {
  return pino(
    {
      level,
      base: { service: 'switchyard' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT, censor: '[redacted]' },
    },
    pino.destination({ fd: 1, sync: false }),
  );
}
