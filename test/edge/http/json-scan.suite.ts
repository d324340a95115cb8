import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { describe, it } from 'node:test';
import { InvalidJson, scanJson } from '../../../edge/http/json-scan.ts';
import { scannableMemory } from '../../../protocol/control-bytes.ts';

// The scanner must accept exactly what JSON.parse accepts. Each case is checked against JSON.parse itself,
// so a case list cannot drift from the reference; the random part mutates valid documents byte by byte.

function parses(b: Buffer): boolean {
  try {
    JSON.parse(b.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

// Bytes in this memory are checked for control characters by its SIMD test, as arena bodies are.
const memory = scannableMemory(1 << 20);

function scans(b: Buffer): boolean {
  try {
    scanJson(b, 0, [], b.buffer === memory.buffer ? memory : undefined);
    return true;
  } catch (err) {
    assert.ok(err instanceof InvalidJson, `unexpected ${String(err)}`);
    return false;
  }
}

function agree(b: Buffer): void {
  assert.equal(scans(b), parses(b), `disagreement on ${JSON.stringify(b.toString('latin1'))}`);
}

/**
 * The same bytes at several offsets of a larger buffer, so word-aligned and unaligned paths both run, and
 * at several offsets of the SIMD-scanned memory.
 */
function atOffsets(text: string | Buffer): Buffer[] {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const plain = [0, 1, 2, 3].map((offset) => {
    const backing = Buffer.alloc(bytes.length + 8, 0x41);
    bytes.copy(backing, offset);
    return backing.subarray(offset, offset + bytes.length);
  });
  const shared = [0, 5, 64 * 1024 - 3].map((offset) => {
    const view = Buffer.from(memory.buffer, offset, bytes.length);
    Buffer.from(memory.buffer, offset, bytes.length + 8).fill(0x41); // what surrounds the text must not count
    bytes.copy(view);
    return view;
  });
  return [...plain, ...shared];
}

const CASES = [
  '{}',
  '[]',
  '""',
  '0',
  '-0',
  '1.5e3',
  '-1E-2',
  '1e+9',
  'true',
  'false',
  'null',
  ' \t\r\n{ } \n',
  '{"a":1,"b":[1,2,{"c":null}],"d":"x\\ny\\u00e9\\"z\\\\","e":true}',
  '[[[[[]]]]]',
  '{"a":{"b":{"c":{}}}}',
  '"\\/\\b\\f\\n\\r\\t"',
  '"\\uD83D\\uDE00"',
  '"\\ud800"',
  '"é漢字😀"',
  '{"é":"ü"}',
  '"a\u007fb"',
  '"\u0080"',
  // invalid
  '',
  ' ',
  '{',
  '}',
  '[',
  '[1,]',
  '{"a":1,}',
  '{,}',
  '[,1]',
  '{"a"}',
  '{"a" 1}',
  '{a:1}',
  "{'a':1}",
  '{"a":1 "b":2}',
  '01',
  '-',
  '1.',
  '.5',
  '1e',
  '1e+',
  '+1',
  '0x1',
  'NaN',
  'Infinity',
  '-Infinity',
  'tru',
  'truee',
  'nul',
  'True',
  '"abc',
  '"a\nb"',
  '"a\tb"',
  '"a\u0000b"',
  '"a\u001fb"',
  '"\\x41"',
  '"\\u12"',
  '"\\u12g4"',
  '"\\',
  '"\\"',
  '"\\\'"',
  '{}{}',
  '{} x',
  '[] []',
  '1 2',
  '"a""b"',
  '{"a":1}}',
  '[1]]',
  '[{]}',
  '{[]}',
  '\u00a0{}',
  '{}\u00a0',
  '\ufeff{}',
  '[1,2',
  '{"a":[1,2}',
  '{"a":tru}',
  '{"a":-}',
  '[-01]',
  '[1.e5]',
  '["a\\u"]',
  '{"\\uZZZZ":1}',
];

describe('scanJson agrees with JSON.parse', () => {
  it('on hand-picked valid and invalid documents, at every alignment', () => {
    for (const text of CASES) for (const b of atOffsets(text)) agree(b);
  });

  it('on long strings with a control character, an escape or a quote at every position', () => {
    // Long enough that the scanner leaves its byte-by-byte start for memchr and word-at-a-time checks, and
    // in shared memory for the SIMD test.
    const base = 'x'.repeat(400);
    for (let at = 0; at <= base.length; at++) {
      for (const insert of ['\n', '\u0001', '\\n', '\\"', '\\u0041', '\\q', '"']) {
        const text = `{"k":"${base.slice(0, at)}${insert}${base.slice(at)}"}`;
        for (const b of atOffsets(text)) agree(b);
      }
    }
  });

  it('on random mutations of valid documents (seeded)', () => {
    let seed = 12345;
    const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const docs = [
      JSON.stringify({
        model: 'gpt-x',
        messages: [{ role: 'user', content: 'héllo "there"\n\tbye \\ / é' }],
        max_tokens: 32,
        temperature: -0.5e-3,
        stream: true,
        stop: null,
      }),
      JSON.stringify([1, -2.5, 3e10, 'a', [], {}, [true, false, null], { 'k\u0001': 'v' }], null, 2),
      JSON.stringify({ nested: { deeper: { deepest: [[[['x']]]] } }, n: 0, s: '\u2028\u2029' }),
    ];
    const alphabet = [...'{}[]",:\\ \n\t0123456789-+.eEtruefalsn']
      .map((c) => c.charCodeAt(0))
      .concat([0x00, 0x1f, 0x7f, 0x41]);
    let accepted = 0;
    let refused = 0;
    for (let n = 0; n < 20000; n++) {
      const bytes = Buffer.from(pick(docs), 'utf8');
      const edits = 1 + Math.floor(random() * 3);
      let b: Buffer = bytes;
      for (let e = 0; e < edits; e++) {
        const at = Math.floor(random() * (b.length + 1));
        const op = random();
        const byte = Buffer.from([pick(alphabet)]);
        if (op < 0.4)
          b = Buffer.concat([b.subarray(0, at), byte, b.subarray(at + 1)]); // replace
        else if (op < 0.7)
          b = Buffer.concat([b.subarray(0, at), byte, b.subarray(at)]); // insert
        else b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]); // delete
      }
      if (!isUtf8(b)) continue; // the scanner's precondition; the edge checks UTF-8 first
      const ok = parses(b);
      assert.equal(scans(b), ok, `disagreement on ${JSON.stringify(b.toString('latin1'))}`);
      if (ok) accepted++;
      else refused++;
    }
    // Both sides of the comparison were exercised.
    assert.ok(accepted > 500 && refused > 500, `accepted ${accepted}, refused ${refused}`);
  });
});

describe('scanJson reports the top-level type and members', () => {
  const spans = (text: string, wanted: string[]) => {
    const b = Buffer.from(text, 'utf8');
    const scan = scanJson(b, 0, wanted);
    return {
      type: scan.type,
      members: Object.fromEntries([...scan.members].map(([k, s]) => [k, b.toString('utf8', s.start, s.end)])),
    };
  };

  it('finds wanted members of the top-level object only, with their exact value bytes', () => {
    const got = spans('{ "messages": [{"model": "inner"}], "model" : "gpt-x" , "stream":true, "n": {"model":1} }', [
      'model',
      'stream',
    ]);
    assert.deepEqual(got, { type: 'object', members: { model: '"gpt-x"', stream: 'true' } });
  });

  it('keeps the last of repeated keys, like JSON.parse, and decodes escaped keys', () => {
    assert.deepEqual(spans('{"model":"a","model":"b"}', ['model']).members, { model: '"b"' });
    assert.deepEqual(spans('{"mod\\u0065l":"a"}', ['model']).members, { model: '"a"' });
    assert.deepEqual(spans('{"model":"a","\\u006dodel":{"x":[1]}}', ['model']).members, { model: '{"x":[1]}' });
  });

  it('reports values of every kind and the top-level type', () => {
    assert.deepEqual(spans('{"model":null,"a":[1,[2]],"b":{"c":{}},"d":-1.5e2}', ['model', 'a', 'b', 'd']).members, {
      model: 'null',
      a: '[1,[2]]',
      b: '{"c":{}}',
      d: '-1.5e2',
    });
    assert.equal(spans('[{"model":"x"}]', ['model']).type, 'array');
    assert.deepEqual(spans('[{"model":"x"}]', ['model']).members, {});
    for (const [text, type] of [
      ['"s"', 'string'],
      ['1', 'number'],
      ['-1', 'number'],
      ['true', 'boolean'],
      ['false', 'boolean'],
      ['null', 'null'],
      ['{}', 'object'],
    ] as const) {
      assert.equal(spans(text, []).type, type, text);
    }
  });

  it('starts where it is told (after a byte-order mark)', () => {
    const b = Buffer.from('\ufeff{"model":"m"}', 'utf8');
    const scan = scanJson(b, 3, ['model']);
    assert.equal(b.toString('utf8', scan.members.get('model')!.start, scan.members.get('model')!.end), '"m"');
  });
});
