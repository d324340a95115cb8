import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAuthTable, type AuthEntry } from '../../state/auth-table.ts';
import { generateTokenSecret, tokenHash } from '../../protocol/token-secret.ts';

function token(id: string, extra: Partial<AuthEntry> = {}) {
  const secret = generateTokenSecret();
  const entry: AuthEntry = {
    tokenId: id,
    hash: tokenHash(secret)!,
    scopes: ['inference'],
    serviceAccountId: null,
    expiresAt: null,
    ...extra,
  };
  return { secret, entry };
}

test('authenticates against the whole table, then against each change as it arrives', () => {
  let clock = 1_000;
  const table = createAuthTable(() => clock);
  const a = token('tok_a');
  const b = token('tok_b', { scopes: ['admin'], serviceAccountId: 'sa_1' });
  assert.deepEqual(table.authenticate(a.secret), { ok: false, reason: 'unknown' });
  table.apply({ whole: [a.entry, b.entry] });
  assert.deepEqual(table.authenticate(a.secret), {
    ok: true,
    principal: { tokenId: 'tok_a', scopes: ['inference'], serviceAccountId: null },
  });
  assert.deepEqual(table.authenticate(b.secret), {
    ok: true,
    principal: { tokenId: 'tok_b', scopes: ['admin'], serviceAccountId: 'sa_1' },
  });
  // A change of scopes applies to the next request, though the secret's hash is remembered.
  table.apply({ put: [{ ...a.entry, scopes: ['read'] }], remove: [] });
  assert.deepEqual(table.authenticate(a.secret), {
    ok: true,
    principal: { tokenId: 'tok_a', scopes: ['read'], serviceAccountId: null },
  });
  // A revocation too.
  table.apply({ put: [], remove: ['tok_a'] });
  assert.deepEqual(table.authenticate(a.secret), { ok: false, reason: 'unknown' });
  // An expiry is read against the clock at each request.
  table.apply({ put: [{ ...b.entry, expiresAt: 2_000 }], remove: [] });
  assert.equal(table.authenticate(b.secret).ok, true);
  clock = 2_000;
  assert.deepEqual(table.authenticate(b.secret), { ok: false, reason: 'expired' });
  // A new whole table replaces everything before it.
  const c = token('tok_c');
  table.apply({ whole: [c.entry] });
  assert.equal(table.authenticate(c.secret).ok, true);
  assert.deepEqual(table.authenticate(b.secret), { ok: false, reason: 'unknown' });
});

test("notes each token's latest use and hands them over once; a removed token's use is dropped", () => {
  let clock = 10;
  const table = createAuthTable(() => clock);
  const a = token('tok_a');
  const b = token('tok_b');
  table.apply({ whole: [a.entry, b.entry] });
  table.authenticate(a.secret);
  clock = 20;
  table.authenticate(a.secret);
  table.authenticate(b.secret);
  table.authenticate('not a token');
  assert.deepEqual(
    table.takeUses().sort(([x], [y]) => x.localeCompare(y)),
    [
      ['tok_a', 20],
      ['tok_b', 20],
    ],
  );
  assert.deepEqual(table.takeUses(), []);
  table.authenticate(a.secret);
  table.authenticate(b.secret);
  table.apply({ put: [], remove: ['tok_b'] });
  assert.deepEqual(table.takeUses(), [['tok_a', 20]]);
  table.authenticate(a.secret);
  table.apply({ whole: [b.entry] });
  assert.deepEqual(table.takeUses(), []);
});

test('a refused request notes no use, and nothing the table keeps holds the secret', () => {
  const table = createAuthTable(() => 5);
  const a = token('tok_a', { expiresAt: 1 });
  table.apply({ whole: [a.entry] });
  assert.equal(table.authenticate(a.secret).ok, false);
  assert.deepEqual(table.takeUses(), []);
  assert.ok(!JSON.stringify(a.entry).includes(a.secret));
});
