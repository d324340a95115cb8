import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import { createAuthSessions } from '../../../control/gauge/auth-sessions.ts';
import { checkVerificationUri, parseDeviceCodes, readPollAnswer } from '../../../control/gauge/device-flow.ts';
import { mergeOAuthClients, resolveClient } from '../../../control/gauge/oauth-clients.ts';
import { ServiceError } from '../../../protocol/errors.ts';
import { startOAuthDeviceFake, type OAuthDeviceFake } from '../../fakes/gauge/oauth-device.ts';

// The device flow's reading of upstream answers (every field checked, nothing thrown), the client setting, and
// the session loop's bounded retries and shutdown, in-process against the OAuth fake with 1 ms seconds.

const GITHUB = new URL('https://github.com');
// GitHub's documented example answer (docs.github.com, device flow, step 1).
const ISSUED = {
  device_code: '3584d83530557fdd1f46af8289938c8ef79f9dc5',
  user_code: 'WDJB-MJHT',
  verification_uri: 'https://github.com/login/device',
  expires_in: 900,
  interval: 5,
};

describe('parseDeviceCodes', () => {
  test("takes GitHub's answer; interval defaults to 5 s (RFC 8628 section 3.2)", () => {
    assert.deepEqual(parseDeviceCodes(ISSUED, GITHUB), {
      deviceCode: ISSUED.device_code,
      userCode: 'WDJB-MJHT',
      verificationUri: 'https://github.com/login/device',
      verificationUriComplete: null,
      expiresIn: 900,
      interval: 5,
    });
    assert.equal(parseDeviceCodes({ ...ISSUED, interval: undefined }, GITHUB)?.interval, 5);
    assert.equal(
      parseDeviceCodes(
        { ...ISSUED, verification_uri_complete: 'https://github.com/login/device?user_code=WDJB-MJHT' },
        GITHUB,
      )?.verificationUriComplete,
      'https://github.com/login/device?user_code=WDJB-MJHT',
    );
  });

  test('refuses any field out of shape or range', () => {
    for (const bad of [
      { device_code: 'has space' },
      { device_code: 'x'.repeat(1025) },
      { device_code: 42 },
      { user_code: '' },
      { user_code: 'AB\nCD' },
      { user_code: 'x'.repeat(65) },
      { verification_uri: 'http://github.com/login/device' },
      { verification_uri: 'javascript:alert(1)' },
      { verification_uri: 'https://user:pw@github.com/login/device' },
      { verification_uri_complete: 'ftp://github.com/x' },
      { expires_in: 0 },
      { expires_in: 3601 },
      { expires_in: '900' },
      { interval: 0 },
      { interval: 1.5 },
      { interval: 301 },
    ]) {
      assert.equal(parseDeviceCodes({ ...ISSUED, ...bad }, GITHUB), null, JSON.stringify(bad));
    }
  });

  test("http only on the configured server's own origin", () => {
    const fake = new URL('http://127.0.0.1:4000');
    assert.equal(
      checkVerificationUri('http://127.0.0.1:4000/login/device', fake),
      'http://127.0.0.1:4000/login/device',
    );
    assert.equal(checkVerificationUri('http://127.0.0.1:4001/login/device', fake), null);
    assert.equal(checkVerificationUri('https://example.com/device', fake), 'https://example.com/device');
  });
});

describe('readPollAnswer', () => {
  const error = (code: unknown, extra: Record<string, unknown> = {}) => ({
    error: code,
    error_description: 'text from the server',
    ...extra,
  });
  test("the flow's errors, whether GitHub's HTTP 200 or RFC 8628's 400", () => {
    for (const status of [200, 400]) {
      assert.deepEqual(readPollAnswer(status, error('authorization_pending')), { kind: 'pending' });
      assert.deepEqual(readPollAnswer(status, error('slow_down', { interval: 10 })), {
        kind: 'slow_down',
        interval: 10,
      });
      assert.deepEqual(readPollAnswer(status, error('access_denied')), { kind: 'denied' });
      assert.deepEqual(readPollAnswer(status, error('expired_token')), { kind: 'expired' });
      assert.deepEqual(readPollAnswer(status, error('token_expired')), { kind: 'expired' });
      assert.deepEqual(readPollAnswer(status, error('incorrect_device_code')), {
        kind: 'refused',
        error: 'incorrect_device_code',
      });
    }
  });

  test('a slow_down interval out of range is ignored (the +5 still applies); odd error codes are not repeated', () => {
    for (const interval of [undefined, 0, 'ten', 301, 2.5])
      assert.deepEqual(readPollAnswer(200, error('slow_down', { interval })), { kind: 'slow_down', interval: null });
    assert.deepEqual(readPollAnswer(200, error('<b>x</b>')), { kind: 'refused', error: null });
    assert.deepEqual(readPollAnswer(400, error(7)), { kind: 'refused', error: null });
  });

  test('5xx and 429 are retried; a token is checked before it is used', () => {
    assert.deepEqual(readPollAnswer(503, null), { kind: 'transient' });
    assert.deepEqual(readPollAnswer(429, error('slow_down')), { kind: 'transient' });
    assert.deepEqual(readPollAnswer(401, null), { kind: 'refused', error: null });
    assert.deepEqual(readPollAnswer(200, null), { kind: 'malformed' });
    assert.deepEqual(readPollAnswer(200, { access_token: 'gho_abc', token_type: 'bearer', scope: 'read:user' }), {
      kind: 'token',
      accessToken: 'gho_abc',
    });
    assert.deepEqual(readPollAnswer(200, { access_token: 'gho_abc', token_type: 'Bearer' }), {
      kind: 'token',
      accessToken: 'gho_abc',
    });
    for (const bad of [
      { access_token: 'gho abc' },
      { access_token: '' },
      { access_token: 5 },
      { access_token: 'gho_abc', token_type: 'mac' },
      {},
    ]) {
      assert.deepEqual(readPollAnswer(200, bad), { kind: 'malformed' }, JSON.stringify(bad));
    }
    assert.deepEqual(readPollAnswer(201, { access_token: 'gho_abc' }), { kind: 'refused', error: null });
  });
});

describe('the client setting', () => {
  test("an object replaces a provider's client, null removes it, a base URL is normalized or refused", () => {
    const one = mergeOAuthClients({}, { 'github-copilot': { clientId: 'Iv1.a', baseUrl: 'https://ghe.example.com/' } });
    assert.deepEqual(one, { 'github-copilot': { clientId: 'Iv1.a', baseUrl: 'https://ghe.example.com' } });
    assert.deepEqual(mergeOAuthClients(one, { 'github-copilot': { clientId: 'Iv1.b' } }), {
      'github-copilot': { clientId: 'Iv1.b', baseUrl: null },
    });
    assert.deepEqual(mergeOAuthClients(one, { 'github-copilot': null }), {});
    assert.deepEqual(mergeOAuthClients(one, {}), one);
    assert.throws(
      () => mergeOAuthClients({}, { 'github-copilot': { clientId: 'x', baseUrl: 'https://ghe.example.com/?a=1' } }),
      (err: ServiceError) => err.param === 'gauge.oauthClients.github-copilot.baseUrl',
    );
  });

  test('no client is 400 naming the setting; loopback-only mode refuses the public server', () => {
    assert.throws(
      () => resolveClient({}, 'github-copilot', 'any'),
      (err: ServiceError) =>
        err.code === 'INVALID_REQUEST' && /gauge\.oauthClients\.github-copilot\.clientId/.test(err.message),
    );
    const clients = { 'github-copilot': { clientId: 'Iv1.a', baseUrl: null } };
    assert.equal(resolveClient(clients, 'github-copilot', 'any').base.href, 'https://github.com/');
    assert.throws(() => resolveClient(clients, 'github-copilot', 'loopback'), /loopback/);
    assert.equal(
      resolveClient(
        { 'github-copilot': { clientId: 'Iv1.a', baseUrl: 'http://127.0.0.1:9' } },
        'github-copilot',
        'loopback',
      ).clientId,
      'Iv1.a',
    );
  });
});

describe('the session loop', () => {
  let fake: OAuthDeviceFake;
  const lines: string[] = [];
  const endings = new EventEmitter();
  const write = (o: { authSession?: string }, m: string) => {
    lines.push(JSON.stringify(o) + m);
    if (m === 'gauge auth session ended') endings.emit(o.authSession!);
  };
  const log = { info: write, warn: write } as never;
  const stored: string[] = [];
  const service = {
    getAccount: () => {
      throw new ServiceError('NOT_FOUND', 'no account');
    },
    createAccount: async (input: { credential?: string }) => {
      stored.push(input.credential!);
      return { id: 'acct_1' };
    },
    updateAccount: async () => ({ id: 'acct_1' }),
  } as never;
  const actor = { actorType: 'token' as const, actorId: 'tok_1' };
  let sessions: ReturnType<typeof createAuthSessions>;

  before(async () => {
    fake = await startOAuthDeviceFake({ clientId: 'Iv1.unit' });
    fake.setIssue({ interval: 1 });
    const settings = {
      enabled: true,
      oauthClients: { 'github-copilot': { clientId: 'Iv1.unit', baseUrl: fake.origin } },
    };
    sessions = createAuthSessions({ service, settings: () => settings, log, allowedHosts: 'loopback', secondMs: 5 });
  });
  after(() => fake.close());

  const flow = { providerId: 'github-copilot', authMode: 'oauth_device' as const };
  /** The session once the loop logs its end. */
  const ended = async (id: string) => {
    if (!['pending', 'polling'].includes(sessions.get(id).state)) return sessions.get(id);
    await once(endings, id);
    return sessions.get(id);
  };

  test('server errors are retried on the interval, then the flow still completes', async () => {
    const s = await sessions.create(flow, actor, 'req_1');
    for (let i = 0; i < 4; i++) fake.failNext(502, 'Bad Gateway');
    await fake.whenPolled(s.userCode!, 1);
    fake.approve(s.userCode!, 'gho_UNITTOKEN');
    const done = await ended(s.id);
    assert.deepEqual([done.state, done.accountId], ['succeeded', 'acct_1']);
    assert.deepEqual(stored, ['gho_UNITTOKEN']);
  });

  test('five failures in a row end the session as unreachable', async () => {
    const s = await sessions.create(flow, actor, 'req_2');
    for (let i = 0; i < 5; i++) fake.failNext(503, 'Service Unavailable');
    const done = await ended(s.id);
    assert.deepEqual(done.failure?.code, 'unreachable');
    assert.equal(fake.grant(s.userCode!).polls, 0);
  });

  test('close ends live sessions, and no line logged names a device code or token', async () => {
    const s = await sessions.create(flow, actor, 'req_3');
    await sessions.close();
    assert.deepEqual(sessions.get(s.id).failure?.code, 'shutdown');
    await assert.rejects(sessions.create(flow, actor, 'req_4'), (err: ServiceError) => err.code === 'CONFLICT');
    const secrets = ['gho_UNITTOKEN', ...fake.grants.map((g) => g.deviceCode)];
    for (const line of lines) for (const secret of secrets) assert.ok(!line.includes(secret), line);
  });
});
