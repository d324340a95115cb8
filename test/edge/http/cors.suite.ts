import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { corsPolicy, normalizeOrigin } from '../../../edge/http/cors.ts';

describe('normalizeOrigin', () => {
  for (const [input, expected] of [
    ['https://app.example', 'https://app.example'],
    ['HTTPS://App.Example', 'https://app.example'],
    ['https://app.example/', 'https://app.example'],
    ['  https://app.example  ', 'https://app.example'],
    ['https://app.example:443', 'https://app.example'],
    ['http://app.example:80/', 'http://app.example'],
    ['http://app.example:443', 'http://app.example:443'],
    ['https://app.example:80', 'https://app.example:80'],
    ['http://localhost:5173', 'http://localhost:5173'],
    ['http://app.example:8080', 'http://app.example:8080'],
    ['http://[::1]:3000', 'http://[::1]:3000'],
    ['chrome-extension://abcdef', 'chrome-extension://abcdef'],
    ['*', '*'],
  ] as const) {
    it(`${JSON.stringify(input)} -> ${expected}`, () => assert.equal(normalizeOrigin(input), expected));
  }

  for (const bad of [
    'null',
    '',
    'garbage',
    'app.example',
    '//app.example',
    'https://app.example/path',
    'https://app.example//',
    'https://app.example?x=1',
    'https://app.example#frag',
    'https://user@app.example',
    'https://',
    'https://app example',
    '1http://app.example',
  ]) {
    it(`rejects ${JSON.stringify(bad)}`, () => assert.equal(normalizeOrigin(bad), null));
  }
});

describe('corsPolicy', () => {
  it('allows listed origins only, comparing normalized forms', () => {
    const policy = corsPolicy(['https://App.example:443/', 'http://localhost:5173']);
    assert.deepEqual(policy.origins, ['https://app.example', 'http://localhost:5173']);
    assert.equal(policy.wildcard, false);
    assert.equal(policy.allows('https://app.example'), true);
    assert.equal(policy.allows('https://APP.example'), true);
    assert.equal(policy.allows('http://localhost:5173'), true);
    for (const other of [
      'https://evil.example',
      'http://app.example',
      'https://app.example:8443',
      'http://localhost:5174',
      'null',
      '',
      undefined,
    ]) {
      assert.equal(policy.allows(other), false, String(other));
    }
  });

  it('drops malformed configured origins', () => {
    const policy = corsPolicy(['not an origin', 'https://ok.example', 'https://x.example/path']);
    assert.deepEqual(policy.origins, ['https://ok.example']);
    assert.equal(policy.allows('https://x.example'), false);
  });

  it('allows none with an empty list', () => {
    const policy = corsPolicy([]);
    assert.equal(policy.wildcard, false);
    assert.deepEqual(policy.origins, []);
    for (const o of ['https://app.example', 'http://localhost', 'null', undefined])
      assert.equal(policy.allows(o), false);
  });

  it('with a wildcard allows any origin and reports wildcard', () => {
    const policy = corsPolicy(['*']);
    assert.equal(policy.wildcard, true);
    assert.equal(policy.allows('https://anything.example'), true);
    assert.equal(policy.allows('http://localhost:1234'), true);
    assert.equal(policy.allows(undefined), false);
    assert.equal(policy.allows(''), false);
  });

  it('echoes the request origin on real responses and exposes the request-id headers', () => {
    const headers = corsPolicy(['https://app.example']).responseHeaders('https://app.example');
    assert.equal(headers['access-control-allow-origin'], 'https://app.example');
    assert.equal(headers['vary'], 'Origin');
    const exposed = headers['access-control-expose-headers']!.split(', ');
    const names = ['x-service-request-id', 'x-request-id', 'request-id', 'retry-after', 'x-service-token-count'];
    for (const h of [...names, 'switchyard-omitted-tools']) assert.ok(exposed.includes(h), h);
    assert.equal(headers['access-control-allow-credentials'], undefined);
  });
});

describe('preflightHeaders', () => {
  const policy = corsPolicy(['https://app.example']);

  it('answers with origin, methods, max-age and vary', () => {
    const h = policy.preflightHeaders('https://app.example', undefined);
    assert.equal(h['access-control-allow-origin'], 'https://app.example');
    assert.deepEqual(h['access-control-allow-methods']!.split(', ').sort(), [
      'DELETE',
      'GET',
      'OPTIONS',
      'PATCH',
      'POST',
      'PUT',
    ]);
    assert.equal(h['access-control-max-age'], '600');
    assert.match(h['vary']!, /Origin/);
    assert.match(h['vary']!, /Access-Control-Request-Headers/);
    assert.equal(h['access-control-allow-headers'], undefined);
  });

  for (const requested of [
    'authorization',
    'Authorization, Content-Type',
    'authorization,x-service-token , x-api-key',
    ' content-type ',
  ]) {
    it(`echoes valid requested headers ${JSON.stringify(requested)}`, () => {
      assert.equal(
        policy.preflightHeaders('https://app.example', requested)['access-control-allow-headers'],
        requested.trim(),
      );
    });
  }

  for (const requested of [
    'authorization\r\nset-cookie: x=1',
    'bad header',
    'a,,b',
    'x-a;',
    '',
    ',authorization',
    'a\u00e9',
  ]) {
    it(`drops malformed requested headers ${JSON.stringify(requested)}`, () => {
      const h = policy.preflightHeaders('https://app.example', requested);
      assert.equal(Object.hasOwn(h, 'access-control-allow-headers'), false);
      assert.equal(h['access-control-allow-origin'], 'https://app.example');
    });
  }
});
