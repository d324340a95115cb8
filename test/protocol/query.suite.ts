import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ServiceError } from '../../protocol/errors.ts';
import { isLocalDay, parseDateTime, readQuery } from '../../protocol/query.ts';

/** Asserts `fn` throws INVALID_REQUEST naming `param`. */
function rejects(fn: () => unknown, param: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ServiceError, String(err));
    assert.equal(err.code, 'INVALID_REQUEST');
    assert.equal(err.param, param);
    assert.equal(err.status, 400);
    return true;
  });
}

describe('readQuery parameter names', () => {
  it('accepts known parameters and an empty query', () => {
    assert.equal(readQuery('limit=5', ['limit', 'cursor']).int('limit', 1, 500, 50), 5);
    assert.equal(readQuery('', ['limit']).int('limit', 1, 500, 50), 50);
  });

  it('rejects an unknown parameter, naming it', () => {
    rejects(() => readQuery('limit=5&sort=asc', ['limit']), 'sort');
  });

  it('rejects an unknown parameter even when it has no value', () => {
    rejects(() => readQuery('debug', ['limit']), 'debug');
  });

  it('rejects a parameter given twice, naming it', () => {
    rejects(() => readQuery('limit=5&limit=6', ['limit']), 'limit');
    rejects(() => readQuery('limit=5&limit=5', ['limit']), 'limit');
  });

  it('names percent-decoded parameters', () => {
    rejects(() => readQuery('li%6Dit=1', ['cursor']), 'limit');
  });
});

describe('QueryReader.int', () => {
  const read = (raw: string) => readQuery(raw, ['limit']).int('limit', 1, 500, 50);

  it('returns the default when absent', () => {
    assert.equal(read(''), 50);
  });

  it('accepts the bounds and values between', () => {
    assert.equal(read('limit=1'), 1);
    assert.equal(read('limit=500'), 500);
    assert.equal(read('limit=42'), 42);
  });

  for (const bad of ['0', '501', '-1', '1.5', 'abc', '', '1e2', '0x10', ' 5', '99999999999999999999']) {
    it(`rejects limit=${JSON.stringify(bad)}`, () => {
      rejects(() => read(`limit=${encodeURIComponent(bad)}`), 'limit');
    });
  }

  it('rejects a bare `limit` with no value rather than using the default', () => {
    rejects(() => read('limit'), 'limit');
  });
});

describe('QueryReader.dateTime', () => {
  const read = (v: string) => readQuery(`since=${encodeURIComponent(v)}`, ['since']).dateTime('since');

  it('is undefined when absent', () => {
    assert.equal(readQuery('', ['since']).dateTime('since'), undefined);
  });

  it('accepts RFC 3339 with Z, offsets and fractions', () => {
    assert.equal(read('2026-01-01T00:00:00Z'), Date.UTC(2026, 0, 1));
    assert.equal(read('2026-01-01T05:30:00+05:30'), Date.UTC(2026, 0, 1));
    assert.equal(read('2025-12-31T19:00:00-05:00'), Date.UTC(2026, 0, 1));
    assert.equal(read('2026-01-01T00:00:00.250Z'), Date.UTC(2026, 0, 1, 0, 0, 0, 250));
    assert.equal(read('2026-01-01T00:00:00.5Z'), Date.UTC(2026, 0, 1, 0, 0, 0, 500));
    assert.equal(read('2026-01-01T00:00:00.123456789Z'), Date.UTC(2026, 0, 1, 0, 0, 0, 123));
    assert.equal(read('2026-01-01t00:00:00z'), Date.UTC(2026, 0, 1));
    assert.equal(read('2024-02-29T12:00:00Z'), Date.UTC(2024, 1, 29, 12));
  });

  for (const bad of [
    '2026-02-30T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T00:60:00Z',
    '2026-01-01',
    '2026-01-01T00:00:00',
    '2026-01-01 00:00:00Z',
    'yesterday',
    '',
    '1767225600000',
  ]) {
    it(`rejects ${JSON.stringify(bad)}`, () => {
      rejects(() => read(bad), 'since');
      assert.equal(parseDateTime(bad), null);
    });
  }
});

describe('QueryReader.localDay', () => {
  const read = (v: string) => readQuery(`day=${encodeURIComponent(v)}`, ['day']).localDay('day');

  it('accepts real days', () => {
    assert.equal(read('2026-01-31'), '2026-01-31');
    assert.equal(read('2024-02-29'), '2024-02-29');
    assert.equal(readQuery('', ['day']).localDay('day'), undefined);
  });

  for (const bad of ['2026-02-30', '2025-02-29', '2026-1-1', '2026-01-01T00:00:00Z', 'today', '']) {
    it(`rejects ${JSON.stringify(bad)}`, () => {
      rejects(() => read(bad), 'day');
      assert.equal(isLocalDay(bad), false);
    });
  }
});

describe('QueryReader.oneOf and string', () => {
  const order = ['asc', 'desc'] as const;

  it('returns a listed value and undefined when absent', () => {
    assert.equal(readQuery('order=desc', ['order']).oneOf('order', order), 'desc');
    assert.equal(readQuery('', ['order']).oneOf('order', order), undefined);
  });

  it('rejects unlisted values, including case variants', () => {
    for (const bad of ['up', 'DESC', ''])
      rejects(() => readQuery(`order=${bad}`, ['order']).oneOf('order', order), 'order');
  });

  it('bounds string length', () => {
    assert.equal(readQuery('q=abc', ['q']).string('q', 3), 'abc');
    assert.equal(readQuery('', ['q']).string('q', 3), undefined);
    rejects(() => readQuery('q=abcd', ['q']).string('q', 3), 'q');
    rejects(() => readQuery('q=', ['q']).string('q', 3), 'q');
  });
});
