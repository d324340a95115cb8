import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { displayPrefix, extractToken, generateTokenSecret, tokenHash } from '../../../edge/http/auth.ts';
import { TOKEN_PREFIX } from '../../../protocol/http/tokens.ts';

const A = 'sk-svc-' + 'A'.repeat(43);
const B = 'sk-svc-' + 'B'.repeat(43);
const C = 'sk-svc-' + 'C'.repeat(43);

describe('extractToken', () => {
  it('reads each carrier', () => {
    assert.equal(extractToken({ authorization: `Bearer ${A}` }), A);
    assert.equal(extractToken({ authorization: `bearer ${A}` }), A);
    assert.equal(extractToken({ authorization: `BEARER \t${A} ` }), A);
    assert.equal(extractToken({ 'x-service-token': A }), A);
    assert.equal(extractToken({ 'x-service-token': `  ${A} ` }), A);
    assert.equal(extractToken({ 'x-api-key': A }), A);
  });

  it('prefers Authorization, then X-Service-Token, then x-api-key', () => {
    assert.equal(extractToken({ authorization: `Bearer ${A}`, 'x-service-token': B, 'x-api-key': C }), A);
    assert.equal(extractToken({ 'x-service-token': B, 'x-api-key': C }), B);
    assert.equal(extractToken({ 'x-service-token': '  ', 'x-api-key': C }), C);
  });

  // The first carrier present is the one used (W2.6): a non-Bearer Authorization is an invalid token, even
  // beside a valid one in a later carrier.
  it('takes a present Authorization header that is not a Bearer credential as an invalid token', () => {
    assert.equal(extractToken({ authorization: 'Basic xyz' }), '');
    assert.equal(extractToken({ authorization: 'Basic xyz', 'x-api-key': C }), '');
    assert.equal(extractToken({ authorization: 'Bearer' }), '');
    assert.equal(extractToken({ authorization: 'Bearer ' }), '');
    assert.equal(extractToken({ authorization: `Bearer ${A} extra` }), '');
    assert.equal(extractToken({ authorization: `Bearer${A}` }), '');
    assert.equal(extractToken({ authorization: `Token ${A}`, 'x-service-token': B }), '');
    assert.equal(tokenHash(''), undefined);
  });

  it('returns undefined without any carrier', () => {
    assert.equal(extractToken({}), undefined);
    assert.equal(extractToken({ 'x-api-key': '' }), undefined);
    assert.equal(extractToken({ cookie: `token=${A}` }), undefined);
  });
});

describe('tokenHash', () => {
  it('is the 64-hex SHA-256 of a well-formed token', () => {
    const hash = tokenHash(A);
    assert.match(hash ?? '', /^[0-9a-f]{64}$/);
    assert.equal(hash, createHash('sha256').update(A).digest('hex'));
    assert.notEqual(tokenHash(B), hash);
    assert.equal(tokenHash(A), hash);
  });

  for (const bad of [
    '',
    'sk-svc-',
    A.slice(0, -1),
    A + 'x',
    'sk-abc-' + 'A'.repeat(43),
    'sk-svc-' + 'A'.repeat(42) + '=',
    ` ${A}`,
    `${A}\n`,
    'Bearer ' + A,
  ]) {
    it(`is undefined for ${JSON.stringify(bad.slice(0, 20))}… (${bad.length} chars)`, () =>
      assert.equal(tokenHash(bad), undefined));
  }
});

describe('generateTokenSecret', () => {
  it('has the token shape, hashes, and 1000 are unique', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const secret = generateTokenSecret();
      assert.match(secret, /^sk-svc-[A-Za-z0-9_-]{43}$/);
      seen.add(secret);
    }
    assert.equal(seen.size, 1000);
    assert.match(tokenHash(generateTokenSecret()) ?? '', /^[0-9a-f]{64}$/);
  });
});

describe('displayPrefix', () => {
  it('shows the fixed prefix and at most four random characters', () => {
    const secret = generateTokenSecret();
    const shown = displayPrefix(secret);
    assert.ok(shown.startsWith(TOKEN_PREFIX));
    assert.ok(secret.startsWith(shown));
    assert.ok(shown.length - TOKEN_PREFIX.length <= 4, shown);
    assert.equal(shown, secret.slice(0, TOKEN_PREFIX.length + 4));
  });
});
