import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ERROR_TABLE, messageKeyOf, type ErrorCode } from '../../protocol/errors.ts';

// docs/api.md, protocol/errors.ts and the spec's table must agree row for row.
const doc = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
const section = doc.split('\n## Error codes\n')[1]?.split('\n## ')[0] ?? '';
const rows = section
  .split('\n')
  .filter((l) => /^\| [A-Z_]+ \|/.test(l))
  .map((l) => l.split('|').map((c) => c.trim()).slice(1, 5));

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

// shared/ sits beside the checkout on developer machines and in CI.
const SPEC = new URL('../../../shared/spec/extensions.md', import.meta.url);

test('the spec extension table and the code agree on every status', { skip: !existsSync(SPEC) && 'shared/ is not beside this checkout' }, () => {
  const spec = readFileSync(SPEC, 'utf8');
  const specRows = spec
    .split('\n')
    .filter((l) => /^\| [A-Z_]+ \| \d{3} \|/.test(l))
    .map((l) => l.split('|').map((c) => c.trim()).slice(1, 3));
  assert.ok(specRows.length > 0, 'shared/spec/extensions.md has the code table');
  assert.deepEqual(
    Object.fromEntries(specRows.map(([code, status]) => [code, Number(status)])),
    Object.fromEntries(Object.entries(ERROR_TABLE).map(([code, e]) => [code, e.status])),
  );
});
