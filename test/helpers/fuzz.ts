import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

// Seeded generators for the route fuzz (test/integration/fuzz.test.ts): values a client can send that a
// route does not expect, bodies built from a route's own TypeBox schema with one part spoiled, path segments
// and query strings. Everything is bounded (a few thousand characters, a few thousand levels) and drawn from
// one PRNG, so a failure names a seed that reproduces it.

import { prng, type Rng } from './prng.ts';

export { prng, type Rng };

export const int = (rng: Rng, lo: number, hi: number): number => lo + Math.floor(rng() * (hi - lo + 1));
export const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;

const nestedArray = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const nestedObject = (depth: number) => '{"a":'.repeat(depth) + 'null' + '}'.repeat(depth);

/** Strings a field, path segment or query value may hold. */
export function junkString(rng: Rng): string {
  return pick(rng, [
    () => '',
    () => ' ',
    () => 'x'.repeat(int(rng, 200, 4000)),
    () => 'é💥\u202e\u0301中文'.repeat(int(rng, 1, 300)),
    () => '\u0000',
    () => `a\u0000b\u0001\u001f\u007f\r\n\t`,
    () => '\ud800', // a lone surrogate: not encodable as UTF-8
    () => '../../etc/passwd',
    () => '%00%zz%',
    () => '@preset/' + 'p'.repeat(int(rng, 1, 300)),
    () => '@route/nope',
    () => 'openai/' + 'm'.repeat(int(rng, 390, 2100)),
    () =>
      pick(rng, [
        '2026-02-30',
        '2026-13-01',
        '9999-99-99',
        '-000001-01-01',
        '2026-01-01T25:61:61Z',
        'yesterday',
        '1e9',
        '0000-00-00',
      ]),
    () => pick(rng, ['sk-svc-' + 'A'.repeat(43), 'Bearer x', '__proto__', 'constructor', 'null', 'true', '[]', '{}']),
  ])();
}

/** A JSON value of any type: what a typed field gets in place of the one it expects. */
export function junkValue(rng: Rng): unknown {
  return pick(rng, [
    () => null,
    () => pick(rng, [true, false]),
    () => pick(rng, [0, -1, -0.5, 1.5, 2 ** 31, 2 ** 53 + 2, -(2 ** 63), 1e308, -1e308, Number.MIN_VALUE]),
    () => junkString(rng),
    () => [],
    () => ({}),
    () => [junkString(rng), int(rng, -5, 5), null],
    () => ({ [junkString(rng).slice(0, 100)]: junkString(rng) }),
    // Deeper nesting is sent as text (junkBodyText): the client's own JSON.stringify would overflow first.
    () => JSON.parse(nestedArray(int(rng, 2, 1000))),
    () => JSON.parse(nestedObject(int(rng, 2, 1000))),
    () => Array.from({ length: int(rng, 50, 2000) }, (_, i) => i),
  ])();
}

/** Bodies no schema accepts: not JSON, not one value, not UTF-8, or JSON of a shape no route takes. */
export function junkBodyText(rng: Rng): Buffer {
  const text = pick(rng, [
    () => '',
    () => '{',
    () => '{}}',
    () => '{} {}',
    () => '{"a":1} trailing garbage',
    () => '{"a":1}\u0000',
    () => '{"a":"\u0000\u0007"}',
    () => '\ufeff{}',
    () => 'null',
    () => '12e99999',
    () => '-',
    () => '"' + 'x'.repeat(int(rng, 1, 4000)) + '"',
    () => '[' + '1,'.repeat(int(rng, 1, 2000)) + '1]',
    () => nestedArray(int(rng, 1000, 10000)),
    () => nestedObject(int(rng, 1000, 5000)),
    () => '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}}',
    () => '{"a":1,"a":2,"a":' + nestedArray(50) + '}',
    () => 'a=1&b=2',
  ])();
  if (rng() < 0.1) return Buffer.concat([Buffer.from(text), Buffer.from([0xff, 0xfe, 0xc3, 0x28])]);
  return Buffer.from(text);
}

interface SchemaNode {
  type?: string;
  anyOf?: SchemaNode[];
  const?: unknown;
  properties?: Record<string, SchemaNode>;
  required?: string[];
  items?: SchemaNode;
  minItems?: number;
  maxItems?: number;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  patternProperties?: Record<string, SchemaNode>;
}

// Strings tried in turn for a string field; the first one its schema accepts is used.
const PLAUSIBLE = [
  'fz',
  'fz-2',
  'openai/gpt-test',
  'styleA.chat_completions',
  'openai',
  'http://127.0.0.1:9/v1',
  'https://example.test',
  'USD',
  'rate_limited',
  'inference',
];

/** A value that mostly satisfies `schema` (every required member, some optional ones): a plausible write. */
export function fromSchema(rng: Rng, schema: TSchema): unknown {
  const node = schema as unknown as SchemaNode;
  if (node.anyOf) return fromSchema(rng, pick(rng, node.anyOf) as unknown as TSchema);
  if ('const' in node) return node.const;
  switch (node.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [name, sub] of Object.entries(node.properties ?? {})) {
        if (node.required?.includes(name) || rng() < 0.6) out[name] = fromSchema(rng, sub as unknown as TSchema);
      }
      return out;
    }
    case 'array': {
      const n = Math.min(node.maxItems ?? 3, (node.minItems ?? 0) + int(rng, 0, 2));
      return Array.from({ length: n }, () => fromSchema(rng, node.items as unknown as TSchema));
    }
    case 'string':
      return PLAUSIBLE.find((s) => Value.Check(schema, s)) ?? 'a'.repeat(Math.max(1, node.minLength ?? 1));
    case 'integer':
    case 'number': {
      const lo = node.minimum ?? 0;
      return Math.min(node.maximum ?? lo + 10, lo + int(rng, 0, 10));
    }
    case 'boolean':
      return rng() < 0.5;
    default:
      return null;
  }
}

/** Every place in `value` a junk value can go: `[]` is the root, `['a', 0]` is `value.a[0]`. */
function paths(value: unknown, at: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(at);
  if (at.length > 6 || value === null || typeof value !== 'object') return out;
  for (const [k, v] of Object.entries(value)) paths(v, [...at, Array.isArray(value) ? Number(k) : k], out);
  return out;
}

/** `base` with one member replaced, removed or added: the common shapes of a client's mistake. */
export function spoil(rng: Rng, base: unknown): unknown {
  const copy = structuredClone(base);
  const targets = paths(copy).filter((p) => p.length > 0);
  if (targets.length === 0 || rng() < 0.1) return rng() < 0.5 ? junkValue(rng) : [copy];
  const path = pick(rng, targets);
  let parent = copy as Record<string | number, unknown>;
  for (const step of path.slice(0, -1)) parent = parent[step] as Record<string | number, unknown>;
  const last = path.at(-1)!;
  const roll = rng();
  if (roll < 0.15) delete parent[last];
  else if (roll < 0.25) parent[`unknown_${int(rng, 0, 9)}`] = junkValue(rng);
  else parent[last] = junkValue(rng);
  return copy;
}

/** encodeURIComponent, which throws on a lone surrogate; that one becomes its (invalid) UTF-8 bytes. */
const encode = (s: string) => {
  try {
    return encodeURIComponent(s);
  } catch {
    return '%ED%A0%80';
  }
};

/** A path segment: an ID as clients write them, too long, or percent-encoded junk (already encoded). */
export function junkSegment(rng: Rng, known: readonly string[]): string {
  return pick(rng, [
    () => encode(pick(rng, known)),
    () => encode(junkString(rng)),
    () => 'z'.repeat(int(rng, 500, 6000)),
    () => '%C3%A9'.repeat(int(rng, 100, 2000)),
    () =>
      pick(rng, [
        '%',
        '%zz',
        '%00',
        '%C0%AF',
        '%ED%A0%80',
        '%2F',
        '%2e%2e',
        '..',
        '.',
        '%20',
        '%0D%0A',
        '%FF%FE',
        '~',
        '*',
      ]),
    () => 'x' + String.fromCharCode(int(rng, 0xa0, 0xff)), // a raw Latin-1 byte: invalid UTF-8 on the wire
  ])();
}

/** A query string (with its `?`), unknown and repeated parameters included, values percent-encoded. */
export function junkQuery(rng: Rng, names: readonly string[]): string {
  const n = int(rng, 0, 5);
  const parts: string[] = [];
  for (let i = 0; i < n; i++) {
    const name = rng() < 0.75 ? pick(rng, names) : encode(junkString(rng).slice(0, 300));
    const value = pick(rng, [
      () => encode(junkString(rng)),
      // biome-ignore lint/correctness/noPrecisionLoss: a number a client may send, past what a double holds exactly
      () => String(pick(rng, [-1, 0, 1, 99999999999999999999, 1e308, 2.5])),
      () => pick(rng, ['2026-01-01', '2026-02-30', '2025-12-31T00:00:00Z', 'true', 'false', 'model', 'provider', '']),
      () => pick(rng, ['%', '%zz', '%00', '%E9', '+', '%2B%2B']),
    ])();
    parts.push(rng() < 0.1 ? name : `${name}=${value}`);
    if (rng() < 0.2) parts.push(`${name}=${value}`);
  }
  if (rng() < 0.05) parts.push('&&=&');
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}
