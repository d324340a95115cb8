import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonText, stringifyDeep } from '../../protocol/json-text.ts';

/** `[{"k":[...0...]}]` nested `depth` levels, built without recursion. */
function nested(depth: number): unknown {
  let value: unknown = 0;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { k: value };
  return value;
}

test('stringifyDeep writes what JSON.stringify writes for every JSON shape', () => {
  const values: unknown[] = [
    null,
    true,
    false,
    0,
    -0,
    -1.5e300,
    'a"\\u0000\u2028é\ud800',
    [],
    {},
    [[]],
    [{}],
    { a: [] },
    { '': { '"k"': [1, 'x', null] } },
    { a: 1, b: undefined, c: () => 1, d: [undefined, 2, () => 3] },
    // biome-ignore lint/suspicious/noSparseArray: a hole is what this case is about
    [1, , 3],
    nested(41),
    { z: 1, a: 2, 10: 3, 2: 4 },
    [{}, [], {}],
  ];
  for (const value of values) assert.equal(stringifyDeep(value), JSON.stringify(value), JSON.stringify(value));
});

test('jsonText writes a value too deep for JSON.stringify, and reads back to the same text', () => {
  const deep = nested(20_000);
  assert.throws(() => JSON.stringify(deep), RangeError);
  const text = jsonText(deep);
  assert.equal(text, '{"k":['.repeat(10_000) + '0' + ']}'.repeat(10_000));
  assert.equal(stringifyDeep(JSON.parse(text)), text);
});
