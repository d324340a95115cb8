import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkCredentialAllowed, checkId, mergeConfig } from '../../../control/gauge/validation.ts';
import { redactText } from '../../../protocol/gauge-redact.ts';

const param = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return (err as { code: string; param: string | null }).code + ' ' + (err as { param: string | null }).param;
  }
  return 'ok';
};

test(
  "config: only the collector's allow-listed keys, URLs without secrets, absolute paths; null restores the " +
    'default',
  () => {
    const status = { collectorId: 'statuspage' as const };
    const logs = { collectorId: 'claude-code' as const };
    assert.deepEqual(mergeConfig(status, { baseUrl: 'https://a' }, { baseUrl: 'http://127.0.0.1:8080/x/' }, {}), {
      baseUrl: 'http://127.0.0.1:8080/x',
    });
    assert.deepEqual(
      mergeConfig(status, { baseUrl: 'http://x' }, { baseUrl: null }, { baseUrl: 'https://status.example.com' }),
      { baseUrl: 'https://status.example.com' },
    );
    assert.deepEqual(mergeConfig(status, { baseUrl: 'http://x' }, { baseUrl: null }, {}), {});
    assert.deepEqual(mergeConfig(logs, {}, { paths: ['/a', '/b', '/a'] }, {}), { paths: ['/a', '/b'] });
    assert.equal(
      param(() => mergeConfig(status, {}, { paths: ['/a'] }, {})),
      'INVALID_REQUEST config.paths',
    );
    assert.equal(
      param(() => mergeConfig(logs, {}, { baseUrl: 'http://x' }, {})),
      'INVALID_REQUEST config.baseUrl',
    );
    assert.equal(
      param(() => mergeConfig({ collectorId: null }, {}, { baseUrl: 'http://x' }, {})),
      'INVALID_REQUEST config.baseUrl',
    );
    for (const bad of [
      'not a url',
      'file:///etc/passwd',
      'https://user:pw@example.com',
      'https://example.com/?key=1',
      'https://example.com/#x',
    ]) {
      assert.equal(
        param(() => mergeConfig(status, {}, { baseUrl: bad }, {})),
        'INVALID_REQUEST config.baseUrl',
        bad,
      );
    }
    assert.equal(
      param(() => mergeConfig(logs, {}, { paths: ['/ok', 'relative'] }, {})),
      'INVALID_REQUEST config.paths[1]',
    );
    assert.equal(mergeConfig(status, { baseUrl: 'http://kept' }, undefined, {}).baseUrl, 'http://kept');
  },
);

test('credentials only where the auth mode reads one; ids up to 160 characters', () => {
  assert.equal(
    param(() => checkCredentialAllowed({ authMode: 'admin_key' }, 'x')),
    'ok',
  );
  assert.equal(
    param(() => checkCredentialAllowed({ authMode: 'none' }, null)),
    'INVALID_REQUEST credential',
  );
  assert.equal(
    param(() => checkCredentialAllowed({ authMode: 'local_logs' }, undefined)),
    'ok',
  );
  assert.equal(
    param(() => checkId('a'.repeat(160))),
    'ok',
  );
  assert.equal(
    param(() => checkId('a'.repeat(161))),
    'INVALID_REQUEST id',
  );
  assert.equal(
    param(() => checkId('', 'sourceId')),
    'INVALID_REQUEST sourceId',
  );
});

test('labels lose email local parts and key-shaped text, and are cut to length', () => {
  assert.equal(
    redactText('Team ada.lovelace+ops@example.co.uk and bob@corp.example'),
    'Team @example.co.uk and @corp.example',
  );
  assert.equal(redactText('key sk-proj-abcdefghijklmnop'), 'key [redacted]');
  assert.equal(redactText('no email @here or a@b'), 'no email @here or a@b');
  assert.equal(redactText('x'.repeat(300), 200).length, 200);
});
