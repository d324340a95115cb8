import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redactDetails, redactSecrets } from '../../protocol/redact.ts';

// What error messages, params and details may echo of client input: secrets of every known shape go,
// wherever they sit in the string; words and the service's own IDs stay.

const TOKEN = `sk-svc-${'Ab3_-'.repeat(8)}xyz`;
const KEYS = {
  local: TOKEN,
  openaiProject: `sk-proj-${'aB3dE6gH9j'.repeat(5)}_T3BlbkFJ-x`,
  openaiService: `sk-svcacct-${'Z9y8X7w6V5'.repeat(4)}`,
  openaiAdmin: `sk-admin-${'Q1w2E3r4T5'.repeat(4)}`,
  anthropic: `sk-ant-api03-${'Kx9_Lm2-Np'.repeat(9)}AA`,
  anthropicAdmin: `sk-ant-admin01-${'Rt5yU8iO0p'.repeat(8)}`,
  openrouter: `sk-or-v1-${'0123456789abcdef'.repeat(4)}`,
  legacyOpenai: `sk-${'a1B2c3D4e5F6'.repeat(4)}`,
  deepseek: `sk-${'9f86d081884c7d65'.repeat(2)}`,
  githubClassic: `ghp_${'A1b2C3d4E5f6'.repeat(3)}`,
  githubOauth: `gho_${'Z1y2X3w4V5u6'.repeat(3)}`,
  githubFineGrained: `github_pat_11ABCDEFG0${'a1_B2c3D4e'.repeat(8)}`,
  credentialRef: 'cred_01J9ZQ3V5K7XW8M2N4P6R8T0YA',
};

describe('redactSecrets: every key shape, wherever it sits', () => {
  for (const [name, key] of Object.entries(KEYS)) {
    for (const [where, text] of [
      ['alone', key],
      ['after a space', `bad value ${key}`],
      ['glued to a letter (the issue: ?xsk-svc-...=1)', `x${key}`],
      ['glued to an underscore', `field_${key}`],
      ['glued to a digit', `9${key}`],
      ['as a query parameter name', `?a=1&zz${key}=1`],
      ['in JSON', JSON.stringify({ [`x${key}`]: key })],
    ] as const) {
      it(`${name}, ${where}`, () => {
        const out = redactSecrets(text);
        assert.equal(out.includes(key), false, out);
        // No 8-character piece of the key survives either (a cut through the middle would leak a part).
        for (let i = 0; i + 8 <= key.length; i += 4)
          assert.equal(out.includes(key.slice(i, i + 8)), false, `${out} keeps ${key.slice(i, i + 8)}`);
        assert.ok(out.includes('[redacted]'));
      });
    }
  }

  it('keeps the text around a glued secret', () => {
    assert.equal(redactSecrets(`?x${TOKEN}=1`), '?x[redacted]=1');
    assert.equal(redactSecrets(`unknown field "ab_${KEYS.githubClassic}"`), 'unknown field "ab_[redacted]"');
    assert.equal(redactSecrets(`a ${KEYS.credentialRef}.`), 'a [redacted].');
  });

  it('Bearer and Basic credentials, any case of the scheme', () => {
    assert.equal(
      redactSecrets('Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln'),
      'Authorization: Bearer [redacted]',
    );
    assert.equal(redactSecrets('bearer abc.def'), 'bearer [redacted]');
    assert.equal(redactSecrets('BEARER Zm9vYmFy'), 'BEARER [redacted]');
    assert.equal(redactSecrets(`Bearer ${TOKEN}`), 'Bearer [redacted]');
    assert.equal(redactSecrets('Basic dXNlcjpwYXNzd29yZA=='), 'Basic [redacted]');
    assert.equal(redactSecrets('xBasic  YWxhZGRpbjpvcGVuc2VzYW1l,'), 'xBasic  [redacted],');
  });
});

describe('redactSecrets: what is not a secret stays', () => {
  for (const text of [
    'The request body must be a JSON object.',
    'task-queue-processing-worker-1 and risk-assessment-for-the-whole-system',
    'ask-me-anything-about-everything-here, desk-reservation-system-for-2025, whisk-together-the-ingredients-42',
    'req_01M80AV56NFA1MPT4G7JGKGB1F tok_01M80AV56NFA1MPT4G7JGKGB1F',
    'openai/gpt-4o-mini-2024-07-18 chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT',
    'sk-short, sk-proj-x, ghp_short, cred_notaulid',
    'the bearer of this message; Bearer token; bearer bonds',
    'Basic setup is required. Basic information about Basic auth.',
    'Basic Zm9vYmFy',
    'msg_01XFDUDYJgAACzvnptvVoYEL resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b',
  ]) {
    it(JSON.stringify(text), () => assert.equal(redactSecrets(text), text));
  }
});

describe('redactSecrets: cost', () => {
  it('long inputs made to backtrack are handled in one pass', () => {
    // A quadratic scan would take minutes on these; a linear one a few milliseconds.
    const many = 'sk-'.repeat(400_000);
    assert.equal(redactSecrets(many), '[redacted]');
    const glued = `x${'a'.repeat(1_000_000)}sk-${'b-'.repeat(500_000)}`;
    assert.ok(redactSecrets(glued) === glued);
    const prose = 'bearer '.repeat(200_000);
    assert.ok(redactSecrets(prose) === prose);
  });
});

describe('redactDetails', () => {
  it('redacts string values and keys, and leaves other values alone', () => {
    assert.deepEqual(redactDetails({ [`x${TOKEN}`]: `y${KEYS.anthropic}`, n: 3, ok: true }), {
      'x[redacted]': 'y[redacted]',
      n: 3,
      ok: true,
    });
  });
});
