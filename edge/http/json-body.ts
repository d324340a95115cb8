import { isUtf8 } from 'node:buffer';
import type { ScannableMemory } from '../../protocol/control-bytes.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { InvalidJson, scanJson, type JsonScan } from './json-scan.ts';

// Strict JSON bodies (docs/api.md, Conventions). JSON.parse already refuses trailing values (`{}{}`,
// `{} x`) and empty input; what it allows and we do not is a non-JSON content type.

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

export function isJsonContentType(contentType: string | undefined): boolean {
  // A missing Content-Type is read as JSON: curl and many scripts omit it on purpose-built JSON calls.
  return contentType === undefined || contentType === '' || JSON_TYPE.test(contentType);
}

// Keys that would reach Object.prototype through a later Object.assign or a naive deep merge. JSON.parse
// makes them harmless own properties; dropping them at the door keeps every later merge harmless too.
// The substring test keeps the reviver (a tenfold slowdown) off the common path, as secure-json-parse does.
// Any letter of a key may be written as a \uXXXX escape (`"\u005f_proto__"`), so the test accepts those too.
const escapable = (word: string) =>
  [...word].map((c) => `(?:${c}|\\\\u${c.charCodeAt(0).toString(16).padStart(4, '0')})`).join('');
const POISON = new RegExp(`"(?:${['__proto__', 'constructor', 'prototype'].map(escapable).join('|')})"\\s*:`, 'i');

function dropPoison(this: unknown, key: string, value: unknown): unknown {
  if (key === '__proto__') return undefined;
  if (key === 'constructor' && value !== null && typeof value === 'object' && 'prototype' in value) return undefined;
  return value;
}

// The reviver drops only keys that decode to exactly `__proto__` or `constructor`. Such a key is in the text
// either verbatim between its quotes or with a \u escape (the only escape that spells a letter or `_`), so
// without either the reviver would change nothing. This test is case-sensitive and needs no per-letter
// alternation, so it fails two to four times faster than POISON on a large body, which is the usual case.
const VERBATIM_KEY = /"(?:__proto__|constructor)"/;
const mayBePoisoned = (text: string) => VERBATIM_KEY.test(text) || text.includes('\\u');

// Past this length the text is not scanned: the parsed value is walked instead (dropPoisonKeys).
const SCAN_MAX = 4096;

/**
 * Drops from a parsed value, at every depth, what dropPoison drops: own `__proto__` keys, and `constructor`
 * keys whose value has a `prototype`. For a long text this is cheaper than the scans above: a chat body is
 * mostly long strings, which a scan reads at ~1 ns a character (as long as JSON.parse takes) and a walk
 * steps over. Iterative, so no nesting depth that JSON.parse accepts can overflow the stack.
 */
function dropPoisonKeys(root: unknown): void {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (Array.isArray(value)) {
      for (const item of value) if (item !== null && typeof item === 'object') stack.push(item);
      continue;
    }
    const record = value as Record<string, unknown>;
    for (const key in record) {
      const child = record[key];
      if (dropPoison(key, child) === undefined) delete record[key];
      else if (child !== null && typeof child === 'object') stack.push(child);
    }
  }
}

/** JSON.parse without the keys dropPoison drops. */
function parseClean(text: string): unknown {
  if (text.length <= SCAN_MAX)
    return mayBePoisoned(text) && POISON.test(text) ? JSON.parse(text, dropPoison) : JSON.parse(text);
  const value: unknown = JSON.parse(text);
  if (value !== null && typeof value === 'object') dropPoisonKeys(value);
  return value;
}

export function parseJsonBody(body: Buffer | null, contentType: string | undefined): unknown {
  return readJsonBody(body, contentType).value;
}

/** The offset at which the JSON text of `body` starts (past one BOM), after the checks every JSON body gets. */
function jsonStart(body: Buffer | null, contentType: string | undefined): number {
  if (!isJsonContentType(contentType)) {
    throw new ServiceError('INVALID_JSON', 'This route takes a JSON body; send Content-Type: application/json.');
  }
  if (body === null || body.length === 0) {
    throw new ServiceError('INVALID_JSON', 'A JSON request body is required.');
  }
  // isUtf8 is as strict as a fatal TextDecoder and allocates nothing; like that decoder, one leading BOM is skipped.
  if (!isUtf8(body)) throw new ServiceError('INVALID_JSON', 'The request body is not valid UTF-8.');
  return body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
}

const notOneValue = () => new ServiceError('INVALID_JSON', 'The request body must be exactly one valid JSON value.');

/** The body parsed, and the text it was parsed from (a relay sends small bodies on as text). */
export function readJsonBody(body: Buffer | null, contentType: string | undefined): { text: string; value: unknown } {
  const from = jsonStart(body, contentType);
  const text = body!.toString('utf8', from);
  try {
    return { text, value: parseClean(text) };
  } catch {
    throw notOneValue();
  }
}

export interface ScannedBody {
  type: JsonScan['type'];
  /** A wanted top-level member's value, parsed; undefined when the body has no such member. */
  member(name: string): unknown;
}

/**
 * The same checks as `readJsonBody` without building the value: for large bodies, which the edge relays as
 * bytes and of which it reads only a few top-level members (see json-scan.ts). A body in `memory` (the body
 * arena) is checked for control characters with its SIMD test. Values it returns are small
 * parsed copies, never merged into anything, so the prototype-key filter has nothing to guard here.
 */
export function scanJsonBody(
  body: Buffer | null,
  contentType: string | undefined,
  wanted: readonly string[],
  memory?: ScannableMemory,
): ScannedBody {
  const from = jsonStart(body, contentType);
  let scan: JsonScan;
  try {
    scan = scanJson(body!, from, wanted, memory);
  } catch (err) {
    if (err instanceof InvalidJson) throw notOneValue();
    throw err;
  }
  return {
    type: scan.type,
    member(name) {
      const span = scan.members.get(name);
      return span === undefined ? undefined : JSON.parse(body!.toString('utf8', span.start, span.end));
    },
  };
}
