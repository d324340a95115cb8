import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ServiceError } from '../../../protocol/errors.ts';
import { isJsonContentType, parseJsonBody } from '../../../edge/http/json-body.ts';

const JSON_CT = 'application/json';
const parse = (text: string, contentType: string | undefined = JSON_CT) =>
  parseJsonBody(Buffer.from(text, 'utf8'), contentType);

function invalidJson(fn: () => unknown): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ServiceError, String(err));
    assert.equal(err.code, 'INVALID_JSON');
    assert.equal(err.status, 400);
    return true;
  });
}

// The textbook vulnerable merge: recurses into any object-valued key, including inherited ones.
function naiveMerge(target: Record<string, unknown>, source: Record<string, unknown>): Record<string, unknown> {
  for (const key in source) {
    const value = source[key];
    if (value !== null && typeof value === 'object') {
      const existing = target[key];
      const next =
        existing !== null && (typeof existing === 'object' || typeof existing === 'function')
          ? existing
          : (target[key] = {});
      naiveMerge(next as Record<string, unknown>, value as Record<string, unknown>);
    } else {
      target[key] = value;
    }
  }
  return target;
}

function assertNotPolluted(): void {
  const probe: Record<string, unknown> = {};
  assert.equal(probe['polluted'], undefined);
  assert.equal(probe['x'], undefined);
  assert.equal(Object.hasOwn(Object.prototype, 'polluted'), false);
  assert.equal(Object.hasOwn(Object.prototype, 'x'), false);
}

describe('parseJsonBody accepts', () => {
  it('a valid object', () => {
    assert.deepEqual(parse('{"model":"m","n":1,"tags":["a"],"nested":{"ok":true}}'), {
      model: 'm',
      n: 1,
      tags: ['a'],
      nested: { ok: true },
    });
  });

  it('surrounding whitespace, a BOM and non-ASCII text', () => {
    assert.deepEqual(parse('  \n{"a":1}\n '), { a: 1 });
    assert.deepEqual(parseJsonBody(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')]), JSON_CT), {
      a: 1,
    });
    assert.deepEqual(parse('{"text":"héllo ✓","esc":"\\u00e9"}'), { text: 'héllo ✓', esc: 'é' });
  });

  for (const ct of [
    JSON_CT,
    'application/json; charset=utf-8',
    'Application/JSON',
    'application/vnd.api+json',
    undefined,
    '',
  ]) {
    it(`content type ${JSON.stringify(ct)}`, () => {
      assert.deepEqual(parse('{"a":1}', ct), { a: 1 });
      assert.equal(isJsonContentType(ct), true);
    });
  }
});

describe('parseJsonBody refuses with INVALID_JSON', () => {
  for (const text of ['{}{}', '{} x', '[1] [2]', '', '{"a":', '{a:1}', "{'a':1}", '{"a":1,}', 'NaN', '\u0000']) {
    it(`body ${JSON.stringify(text)}`, () => invalidJson(() => parse(text)));
  }

  it('a null body', () => invalidJson(() => parseJsonBody(null, JSON_CT)));

  it('invalid UTF-8 bytes', () => {
    invalidJson(() =>
      parseJsonBody(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), JSON_CT),
    );
    invalidJson(() => parseJsonBody(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x22, 0x7d]), JSON_CT));
  });

  for (const ct of [
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/jsonp',
    'text/json',
  ]) {
    it(`content type ${ct} even with a valid body`, () => {
      invalidJson(() => parse('{"a":1}', ct));
      assert.equal(isJsonContentType(ct), false);
    });
  }
});

describe('parseJsonBody prototype poisoning', () => {
  it('drops a __proto__ key so merges cannot reach Object.prototype', () => {
    const parsed = parse('{"__proto__":{"polluted":true},"a":1}') as Record<string, unknown>;
    assert.equal(Object.hasOwn(parsed, '__proto__'), false);
    assert.deepEqual(Object.keys(parsed), ['a']);
    assert.equal(parsed['a'], 1);
    assert.equal(Object.getPrototypeOf(parsed), Object.prototype);
    const assigned = Object.assign({}, parsed) as Record<string, unknown>;
    assert.equal(assigned['polluted'], undefined);
    naiveMerge({}, parsed);
    assertNotPolluted();
  });

  it('drops __proto__ keys at any depth, including inside arrays', () => {
    const parsed = parse('{"a":{"b":[{"__proto__":{"polluted":true},"c":1}]}}');
    assert.deepEqual(parsed, { a: { b: [{ c: 1 }] } });
    naiveMerge({}, parsed as Record<string, unknown>);
    assertNotPolluted();
  });

  it('keeps constructor.prototype harmless', () => {
    const parsed = parse('{"constructor":{"prototype":{"x":1}}}') as Record<string, unknown>;
    assert.equal(Object.hasOwn(parsed, 'constructor'), false);
    naiveMerge({}, parsed);
    assertNotPolluted();
  });

  // Regression: the fast-path substring test missed keys written with \uXXXX escapes, which JSON.parse
  // decodes to a real own `__proto__` key that a naive merge then follows into Object.prototype.
  for (const text of [
    '{"\\u005f_proto__":{"polluted":true}}',
    '{"\\u005F\\u005F\\u0070\\u0072\\u006F\\u0074\\u006F\\u005F\\u005F":{"polluted":true}}',
    '{"\\u0063onstructor":{"\\u0070rototype":{"x":1}}}',
  ]) {
    it(`drops an escaped key in ${text}`, () => {
      const parsed = parse(text) as Record<string, unknown>;
      assert.deepEqual(Object.keys(parsed), []);
      naiveMerge({}, parsed);
      assertNotPolluted();
    });
  }

  it('keeps ordinary keys that merely contain the words', () => {
    assert.deepEqual(parse('{"constructor":"x","prototype":1,"my__proto__":2}'), {
      constructor: 'x',
      prototype: 1,
      my__proto__: 2,
    });
  });
});
