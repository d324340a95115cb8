import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hostAllowed, isLoopbackAddress, isLoopbackHostname } from '../../../edge/http/host-check.ts';

const BOUND = '127.0.0.1';

describe('hostAllowed on a local-only listener', () => {
  for (const host of [
    'localhost',
    'localhost:3939',
    'LOCALHOST:3939',
    '127.0.0.1:1',
    '127.0.0.1:3939',
    '127.5.6.7',
    '[::1]:3939',
    '[::1]',
    'foo.localhost',
    'app.foo.localhost:3939',
  ]) {
    it(`allows ${host}`, () => assert.equal(hostAllowed(host, BOUND), true));
  }

  for (const host of [
    'evil.example',
    'evil.example:3939',
    '127.0.0.1.evil.example',
    '127.0.0.1.evil.example:3939',
    'localhost.evil.example',
    'evillocalhost',
    '10.0.0.1',
    '10.0.0.1:3939',
    '0.0.0.0:3939',
    '[::2]:3939',
    '[::1.evil.example]',
    '128.0.0.1',
    // W2.6: a "port" that is not digits makes the whole value a name under another domain.
    '127.0.0.1:47391.evil.example',
    'localhost:3939.evil.example',
    '[::1]:3939.evil.example',
    '[::1]evil.example',
    '127.0.0.1:80:80',
    '127.0.0.1, evil.example',
    '127.0.0.1 evil.example',
    'user@127.0.0.1',
  ]) {
    it(`refuses ${host}`, () => assert.equal(hostAllowed(host, BOUND), false));
  }

  it('allows a missing or empty Host header', () => {
    assert.equal(hostAllowed(undefined, BOUND), true);
    assert.equal(hostAllowed('', BOUND), true);
  });

  it('allows the bound host itself, case-insensitively', () => {
    assert.equal(hostAllowed('192.168.1.20:3939', '192.168.1.20'), true);
    assert.equal(hostAllowed('MyBox.lan:3939', 'mybox.lan'), true);
    assert.equal(hostAllowed('mybox.lan', 'MyBox.lan'), true);
    assert.equal(hostAllowed('192.168.1.21:3939', '192.168.1.20'), false);
  });
});

describe('isLoopbackHostname / isLoopbackAddress', () => {
  it('classifies hostnames', () => {
    for (const h of [
      'localhost',
      'a.localhost',
      '127.0.0.1',
      '127.255.255.254',
      '::1',
      '0:0:0:0:0:0:0:1',
      '::ffff:127.0.0.1',
    ]) {
      assert.equal(isLoopbackHostname(h), true, h);
    }
    for (const h of ['localhost.', 'example.com', '10.0.0.1', '127.0.0', '::', '::ffff:10.0.0.1'])
      assert.equal(isLoopbackHostname(h), false, h);
  });

  it('classifies socket addresses', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1', '0000:0000:0000:0000:0000:0000:0000:0001']) {
      assert.equal(isLoopbackAddress(a), true, a);
    }
    for (const a of ['10.0.0.1', '192.168.0.1', '::ffff:10.0.0.1', '::', '0.0.0.0'])
      assert.equal(isLoopbackAddress(a), false, a);
  });
});
