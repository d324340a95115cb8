// Text that may echo client input (an unknown field's name, a bad query parameter) passes through here
// before it reaches a response or a log line: anything shaped like a local token or a provider key is
// replaced. Names and IDs never match these shapes.
const SECRET_SHAPES = /\b(?:sk-svc-[A-Za-z0-9_-]{6,}|sk-(?:proj|ant|or)-[A-Za-z0-9_-]{6,}|sk-[A-Za-z0-9_-]{20,})|\bBearer\s+[^\s"'`]+/g;

export function redactSecrets(text: string): string {
  return text.replace(SECRET_SHAPES, '[redacted]');
}

export function redactDetails(details: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(details)) out[redactSecrets(k)] = typeof v === 'string' ? redactSecrets(v) : v;
  return out;
}
