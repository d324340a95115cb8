import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ERROR_TABLE, messageKeyOf, type ErrorCode } from '../../protocol/errors.ts';

// docs/api.md and protocol/errors.ts must agree row for row.
const doc = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
const section = doc.split('\n## Error codes\n')[1]?.split('\n## ')[0] ?? '';
const rows = section
  .split('\n')
  .filter((l) => /^\| [A-Z_]+ \|/.test(l))
  .map((l) =>
    l
      .split('|')
      .map((c) => c.trim())
      .slice(1, 5),
  );

test('docs/api.md lists every code of protocol/errors.ts, in order, with its status, messageKey and type', () => {
  assert.deepEqual(
    rows.map(([code]) => code),
    Object.keys(ERROR_TABLE),
  );
  for (const [code, status, key, type] of rows as string[][]) {
    const entry = ERROR_TABLE[code as ErrorCode];
    assert.equal(Number(status), entry.status, code);
    assert.equal(key, messageKeyOf(code as ErrorCode), code);
    assert.equal(type, entry.type, code);
  }
});
