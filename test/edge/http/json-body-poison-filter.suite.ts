import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJsonBody } from '../../../edge/http/json-body.ts';

// parseJsonBody runs its reviver only when cheap substring tests say a poisoned key may be present, and on a
// long body walks the parsed value instead. The reference below always runs the reviver: whatever the filter
// skips, the result must be the same, short bodies and long alike.

function dropPoison(this: unknown, key: string, value: unknown): unknown {
  if (key === '__proto__') return undefined;
  if (key === 'constructor' && value !== null && typeof value === 'object' && 'prototype' in value) return undefined;
  return value;
}

const parse = (bytes: Buffer) => parseJsonBody(bytes, 'application/json');
const reference = (text: string) => JSON.parse(text, dropPoison) as unknown;

/** Own keys at every depth, so a kept `__proto__` own property cannot hide from deepEqual. */
function keysDeep(value: unknown, path = '$'): string[] {
  if (value === null || typeof value !== 'object') return [];
  return Object.keys(value).flatMap((k) => [
    `${path}.${k}`,
    ...keysDeep((value as Record<string, unknown>)[k], `${path}.${k}`),
  ]);
}

const KEYS = ['__proto__', 'constructor', 'prototype', '__PROTO__', 'Constructor', 'my__proto__', 'a'];
const SPELLINGS = (key: string): string[] => [
  JSON.stringify(key),
  // Each letter in turn as a \uXXXX escape, upper- and lower-case hex.
  ...[...key].map(
    (_, i) =>
      `"${[...key].map((c, j) => (j === i ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : c)).join('')}"`,
  ),
  `"${[...key].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`).join('')}"`,
];
const VALUES = ['1', '"x"', 'null', '{"prototype":{"x":1}}', '{"polluted":true}', '[{"prototype":1}]'];

// A member that makes a body long enough to be walked rather than scanned (json-body.ts, SCAN_MAX).
const PAD = `"pad":"${'x'.repeat(5000)}",`;

function bodies(): string[] {
  const out: string[] = [];
  for (const key of KEYS) {
    for (const spelled of SPELLINGS(key)) {
      for (const value of VALUES) {
        for (const pad of ['', PAD]) {
          out.push(`{${pad}${spelled}:${value},"b":2}`);
          out.push(
            `{${pad}"outer":[{"n":1},{${spelled} \n: ${value}}],"s":"text with ${spelled.replaceAll('"', '\\"')} in ` +
              `it"}`,
          );
          out.push(`[{${pad}"deep":[[{"k":{${spelled}:${value}}}]]}]`);
        }
      }
    }
  }
  return out;
}

describe('parseJsonBody gives what always running the reviver gives', () => {
  it(`for ${bodies().length} bodies with every spelling of the poisoned keys`, () => {
    for (const text of bodies()) {
      const got = parse(Buffer.from(text, 'utf8'));
      const want = reference(text);
      assert.deepEqual(got, want, text);
      assert.deepEqual(keysDeep(got), keysDeep(want), text);
    }
  });

  it('behind a BOM and non-ASCII text', () => {
    const text = '{"é":"✓","__proto__":{"polluted":true},"n":{"constructor":{"prototype":{}}}}';
    const got = parse(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text, 'utf8')])) as Record<
      string,
      unknown
    >;
    assert.deepEqual(keysDeep(got), ['$.é', '$.n']);
    assert.deepEqual(got, { é: '✓', n: {} });
  });

  it('for a long body nested deeper than a recursive walk could go', () => {
    const depth = 100_000;
    const text = `${'['.repeat(depth)}{"__proto__":{"polluted":true},"k":1}${']'.repeat(depth)}`;
    let got = parse(Buffer.from(text, 'utf8'));
    for (let i = 0; i < depth; i++) got = (got as unknown[])[0];
    assert.deepEqual(got, { k: 1 });
    assert.deepEqual(Object.keys(got as object), ['k']);
  });

  it('when the words appear only inside string values', () => {
    const text = '{"content":"\\"__proto__\\": and \\"constructor\\": are just words","__proto__x":1}';
    assert.deepEqual(parse(Buffer.from(text, 'utf8')), {
      content: '"__proto__": and "constructor": are just words',
      __proto__x: 1,
    });
  });
});
