// Text that may echo client input (an unknown field's name, a bad query parameter) passes through here
// before it reaches a response or a log line: anything shaped like a local token, a provider key or a
// credential reference is replaced, wherever it sits (`?xsk-svc-...=1` glues a letter to the token, so no
// `\b` anchors). The service's own IDs (`req_`, `tok_` + ULID) never match these shapes.
//
// The text can be long (a field name from a 16 MiB body), so every step is linear: runs of key characters
// are found by one regex whose match cannot backtrack, and each run is judged with indexOf and plain loops.

const REDACTED = '[redacted]';

/** Maximal runs of the characters keys are made of; a key never spans two runs. */
const RUN = /[A-Za-z0-9_-]{6,}/g;

/** `sk-` prefixes distinctive enough to be a key wherever they start, given 6 more characters. */
const SK_PREFIXES = ['sk-svc-', 'sk-proj-', 'sk-svcacct-', 'sk-admin-', 'sk-ant-', 'sk-or-'];
const SK_MIN_TAIL = 6;
/** A bare `sk-` key (legacy OpenAI, DeepSeek, Moonshot...) is at least this long after `sk-`. */
const SK_GENERIC_MIN = 20;
/** Glued to a letter ("task-", "risk-"), a bare `sk-` run is a key only with a stretch this dense. */
const DENSE_MIN = 16;

// GitHub tokens (`ghp_` and its siblings, `github_pat_`) and credential references (`cred_` + ULID): each
// alternative opens with a literal and ends in a greedy class, so the scan stays linear.
const OTHER_KEYS = /gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|cred_[0-9A-HJKMNP-TV-Z]{26}/g;

// An HTTP authentication scheme (case-insensitive, RFC 9110 section 11.1) and its token68 credential.
const SCHEME = /(bearer|basic)(\s+)([A-Za-z0-9._~+/-]+=*)/gi;

const isAlnum = (c: number): boolean =>
  (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;

/** Whether `run` from `from` on holds DENSE_MIN alphanumerics in a row, a digit among them. */
function hasDenseStretch(run: string, from: number): boolean {
  let length = 0;
  let digit = false;
  for (let i = from; i < run.length; i++) {
    const c = run.charCodeAt(i);
    if (!isAlnum(c)) {
      length = 0;
      digit = false;
      continue;
    }
    length++;
    digit ||= isDigit(c);
    if (length >= DENSE_MIN && digit) return true;
  }
  return false;
}

/** Where the first `sk-` key of a run starts (it ends with the run), or -1. */
function skKeyStart(run: string): number {
  let denseChecked = false;
  for (let at = run.indexOf('sk-'); at !== -1; at = run.indexOf('sk-', at + 1)) {
    const tail = run.length - at;
    for (const prefix of SK_PREFIXES) if (run.startsWith(prefix, at) && tail >= prefix.length + SK_MIN_TAIL) return at;
    if (tail < 3 + SK_GENERIC_MIN) continue;
    if (at === 0 || !isAlnum(run.charCodeAt(at - 1))) return at;
    // A later `sk-` sees a suffix of what this one sees: one look at the first glued one decides for all.
    if (!denseChecked) {
      denseChecked = true;
      if (hasDenseStretch(run, at + 3)) return at;
    }
  }
  return -1;
}

function redactRun(run: string): string {
  const at = run.indexOf('sk-') === -1 ? -1 : skKeyStart(run);
  const head = at === -1 ? run : run.slice(0, at);
  const out = head.includes('_') ? head.replace(OTHER_KEYS, REDACTED) : head;
  return at === -1 ? out : out + REDACTED;
}

/** An ordinary lowercase word after "Bearer" ("bearer bonds") is prose, not a credential. */
function isBearerSecret(token: string): boolean {
  return !/^[a-z]{1,19}$/.test(token);
}

/** A Basic credential is base64 of `user:password`: printable ASCII with a colon ("Basic setup" is not). */
function isBasicSecret(token: string): boolean {
  const decoded = Buffer.from(token, 'base64');
  if (decoded.length < 3 || !decoded.includes(0x3a)) return false;
  for (const byte of decoded) if (byte < 0x20 || byte > 0x7e) return false;
  return true;
}

function redactScheme(match: string, scheme: string, space: string, token: string): string {
  const secret = scheme.toLowerCase() === 'bearer' ? isBearerSecret(token) : isBasicSecret(token);
  return secret ? `${scheme}${space}${REDACTED}` : match;
}

export function redactSecrets(text: string): string {
  // Keys first: "Bearer sk-..." then reads "Bearer [redacted]", which the scheme pass leaves alone.
  return text.replace(RUN, redactRun).replace(SCHEME, redactScheme);
}

export function redactDetails(details: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(details)) out[redactSecrets(k)] = typeof v === 'string' ? redactSecrets(v) : v;
  return out;
}
