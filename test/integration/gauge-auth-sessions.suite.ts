import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { paidUser, startCopilotGaugeFake, type CopilotGaugeFake } from '../fakes/gauge/github-copilot.ts';
import { DEVICE_GRANT, startOAuthDeviceFake, type OAuthDeviceFake } from '../fakes/gauge/oauth-device.ts';
import { assertSecretsNowhere } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Gauge auth sessions end to end: the service runs GitHub's device flow against a loopback fake of it, stores
// the token it obtains as a github-copilot account, and that account then reads the Copilot quota fake with
// it. SWITCHYARD_GAUGE_AUTH_SECOND_MS=20 makes one protocol second 20 ms, so GitHub's real 5 s interval is
// 100 ms here; the fake still speaks whole seconds. Tests wait on the fake's polls and the service's log
// lines, never on the clock. The last test greps everything the service said and wrote for the device codes
// and tokens.

const CLIENT_ID = 'Ov23liTESTCLIENT0001';
const TOKENS = [
  `gho_SENTINELTOKEN0001${process.pid}aaaaaaaaaaaaaaaa`,
  `gho_SENTINELTOKEN0002${process.pid}bbbbbbbbbbbbbbbb`,
];

let svc: InProcessService;
let oauth: OAuthDeviceFake;
let copilot: CopilotGaugeFake;
before(async () => {
  oauth = await startOAuthDeviceFake({ clientId: CLIENT_ID });
  copilot = await startCopilotGaugeFake({ token: TOKENS[0]! });
  copilot.setUser(
    paidUser({
      snapshots: { chat: { entitlement: 300, remaining: 120, percent_remaining: 40, unlimited: false } },
      resetDate: '2026-12-01T00:00:00Z',
    }),
  );
  svc = await startInProcess({ env: { SWITCHYARD_GAUGE_AUTH_SECOND_MS: '20' } });
});
after(async () => {
  await svc.stop();
  await oauth.close();
  await copilot.close();
});

const SESSIONS = '/v1/gauge/auth-sessions';
const flow = { providerId: 'github-copilot', authMode: 'oauth_device' };
const setClient = async (client: unknown) => {
  const reply = await svc.request('PATCH', '/v1/settings', {
    body: { gauge: { oauthClients: { 'github-copilot': client } } },
  });
  assert.equal(reply.status, 200, reply.text);
  return reply;
};
async function expectError(method: string, path: string, status: number, code: string, body?: unknown) {
  const reply = await svc.request(method, path, body === undefined ? {} : { body });
  assert.equal(reply.status, status, `${method} ${path}: ${reply.text}`);
  assert.equal(reply.json.error.code, code, reply.text);
  return reply.json.error;
}
async function start(body: unknown = flow) {
  const reply = await svc.request('POST', SESSIONS, { body });
  assert.equal(reply.status, 201, reply.text);
  return reply.json;
}
/** The session once it is final: the service logs the end, then answers GET with it. */
async function ended(id: string) {
  await svc.waitForLog((l) => l.msg === 'gauge auth session ended' && l.authSession === id, 10_000);
  return (await svc.request('GET', `${SESSIONS}/${id}`)).json;
}

test(
  'bad input: body, provider and auth mode, unknown or mismatched account, opt-in, the client-ID setting, path and ' +
    'query',
  async () => {
    await expectError('POST', SESSIONS, 400, 'INVALID_REQUEST', {});
    await expectError('POST', SESSIONS, 400, 'INVALID_JSON', { ...flow, clientId: 'x' });
    await expectError('POST', SESSIONS, 400, 'INVALID_REQUEST', { ...flow, accountId: 'a'.repeat(161) });
    assert.equal(
      (await expectError('POST', SESSIONS, 400, 'INVALID_REQUEST', { providerId: 'nope', authMode: 'oauth_device' }))
        .param,
      'providerId',
    );
    assert.equal(
      (
        await expectError('POST', SESSIONS, 400, 'INVALID_REQUEST', {
          providerId: 'github-copilot',
          authMode: 'api_key',
        })
      ).param,
      'authMode',
    );
    assert.equal(
      (await expectError('POST', SESSIONS, 400, 'INVALID_REQUEST', { providerId: 'openai', authMode: 'oauth_device' }))
        .param,
      'authMode',
    );
    await expectError('POST', SESSIONS, 404, 'NOT_FOUND', { ...flow, accountId: 'acct_nope' });
    const pasted = await svc.request('POST', '/v1/gauge/accounts', {
      body: { providerId: 'github-copilot', authMode: 'api_key' },
    });
    assert.equal(pasted.status, 201, pasted.text);
    assert.equal(
      (await expectError('POST', SESSIONS, 400, 'INVALID_REQUEST', { ...flow, accountId: pasted.json.id })).param,
      'accountId',
    );
    // An oauth_device account is made by a session only, never by a pasted credential.
    await expectError('POST', '/v1/gauge/accounts', 404, 'NOT_FOUND', { ...flow, credential: 'x' });

    await expectError('POST', SESSIONS, 409, 'GAUGE_DISABLED', flow);
    assert.equal((await svc.request('PATCH', '/v1/settings', { body: { gauge: { enabled: true } } })).status, 200);
    const noClient = await expectError('POST', SESSIONS, 400, 'INVALID_REQUEST', flow);
    assert.match(noClient.message, /gauge\.oauthClients\.github-copilot\.clientId/);

    for (const [client, param] of [
      [{ clientId: 'has space' }, 'gauge.oauthClients.github-copilot'],
      [{ clientId: 'x'.repeat(129) }, 'gauge.oauthClients.github-copilot'],
      [{ baseUrl: null }, 'gauge.oauthClients.github-copilot'],
      [{ clientId: CLIENT_ID, baseUrl: 'ftp://127.0.0.1' }, 'gauge.oauthClients.github-copilot.baseUrl'],
      [{ clientId: CLIENT_ID, baseUrl: 'http://u:p@127.0.0.1' }, 'gauge.oauthClients.github-copilot.baseUrl'],
    ] as const) {
      const reply = await svc.request('PATCH', '/v1/settings', {
        body: { gauge: { oauthClients: { 'github-copilot': client } } },
      });
      assert.equal(reply.status, 400, JSON.stringify(client));
      assert.equal(reply.json.error.param, param, reply.text);
    }
    await expectError('PATCH', '/v1/settings', 400, 'INVALID_JSON', {
      gauge: { oauthClients: { openai: { clientId: 'x' } } },
    });

    // The public GitHub is refused in loopback-only mode (the test suites' SWITCHYARD_GAUGE_ALLOWED_HOSTS).
    const shown = await setClient({ clientId: CLIENT_ID });
    assert.deepEqual(shown.json.gauge.oauthClients, { 'github-copilot': { clientId: CLIENT_ID, baseUrl: null } });
    assert.match((await expectError('POST', SESSIONS, 400, 'INVALID_REQUEST', flow)).message, /loopback/);
    await setClient({ clientId: CLIENT_ID, baseUrl: `${oauth.origin}/` });
    assert.deepEqual((await svc.request('GET', '/v1/settings')).json.gauge.oauthClients, {
      'github-copilot': { clientId: CLIENT_ID, baseUrl: oauth.origin },
    });

    await expectError('GET', `${SESSIONS}/${'a'.repeat(161)}`, 400, 'INVALID_REQUEST');
    await expectError('GET', `${SESSIONS}/auth_nope`, 404, 'NOT_FOUND');
    await expectError('DELETE', `${SESSIONS}/auth_nope`, 404, 'NOT_FOUND');
    await expectError('GET', `${SESSIONS}/auth_nope?x=1`, 400, 'INVALID_REQUEST');
  },
);

test(
  'the flow completes: pending, polling, then the token creates an oauth_device account that collects with ' + 'it',
  async () => {
    const session = await start();
    const grant = oauth.grant(session.userCode);
    assert.deepEqual(Object.keys(session).sort(), [
      'accountId',
      'authMode',
      'createdAt',
      'expiresAt',
      'failure',
      'id',
      'interval',
      'providerId',
      'state',
      'userCode',
      'verificationUri',
      'verificationUriComplete',
    ]);
    assert.equal(session.state, 'pending');
    assert.equal(session.verificationUri, `${oauth.origin}/login/device`);
    assert.equal(session.verificationUriComplete, null);
    assert.equal(session.interval, 5);
    assert.equal(session.accountId, null);
    assert.ok(Date.parse(session.expiresAt) > Date.parse(session.createdAt));
    const codeRequest = oauth.requests.find((r) => r.path === '/login/device/code')!;
    assert.match(String(codeRequest.headers['content-type']), /^application\/x-www-form-urlencoded/);
    assert.equal(codeRequest.headers.accept, 'application/json');
    assert.deepEqual(Object.fromEntries(new URLSearchParams(codeRequest.body)), {
      client_id: CLIENT_ID,
      scope: 'read:user',
    });

    await oauth.whenPolled(grant.userCode, 2);
    assert.equal((await svc.request('GET', `${SESSIONS}/${session.id}`)).json.state, 'polling');
    oauth.approve(grant.userCode, TOKENS[0]!);
    const done = await ended(session.id);
    assert.equal(done.state, 'succeeded');
    assert.equal(done.failure, null);
    assert.match(done.accountId, /^acct_/);
    const poll = oauth.requests.find((r) => r.path === '/login/oauth/access_token')!;
    assert.deepEqual(Object.fromEntries(new URLSearchParams(poll.body)), {
      client_id: CLIENT_ID,
      device_code: grant.deviceCode,
      grant_type: DEVICE_GRANT,
    });

    const account = (await svc.request('GET', '/v1/gauge/accounts')).json.data.find(
      (a: { id: string }) => a.id === done.accountId,
    );
    assert.deepEqual(
      [account.providerId, account.authMode, account.credentialConfigured, account.label],
      ['github-copilot', 'oauth_device', true, 'GitHub Copilot'],
    );
    const audit = (
      await svc.request('GET', `/v1/audit-events?action=gauge-account.create&resourceId=${done.accountId}`)
    ).json.data;
    assert.deepEqual(
      audit.map((e: { metadata: Record<string, unknown> }) => [e.metadata.via, e.metadata.credentialConfigured]),
      [['auth-session', true]],
    );

    assert.equal(
      (
        await svc.request('PATCH', `/v1/gauge/accounts/${done.accountId}`, {
          body: { config: { baseUrl: copilot.baseUrl } },
        })
      ).status,
      200,
    );
    const refreshed = await svc.request('POST', '/v1/gauge/refresh', { body: { sourceIds: [done.accountId] } });
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.equal(refreshed.json.data[0].ok, true, refreshed.text);
    assert.equal(copilot.requests.at(-1)!.headers.authorization, `token ${TOKENS[0]}`);

    // A session naming the account replaces its credential instead of creating another account.
    const again = await start({ ...flow, accountId: done.accountId });
    assert.equal(again.accountId, done.accountId);
    oauth.approve(again.userCode, TOKENS[1]!);
    const replaced = await ended(again.id);
    assert.deepEqual([replaced.state, replaced.accountId], ['succeeded', done.accountId]);
    const accounts = (await svc.request('GET', '/v1/gauge/accounts')).json.data.filter(
      (a: { authMode: string }) => a.authMode === 'oauth_device',
    );
    assert.equal(accounts.length, 1);
  },
);

test('slow_down adds 5 s for the rest of the session, or takes the server interval when larger', async () => {
  const session = await start();
  oauth.slowDownNext(session.userCode);
  // Poll 1 is answered slow_down; once poll 2 arrives the service has taken it in.
  await oauth.whenPolled(session.userCode, 2);
  assert.equal((await svc.request('GET', `${SESSIONS}/${session.id}`)).json.interval, 10);
  // Poll 3 gets slow_down with interval 20 (more than 10 + 5): the larger wins.
  oauth.slowDownNext(session.userCode, 20);
  await oauth.whenPolled(session.userCode, 4);
  assert.equal((await svc.request('GET', `${SESSIONS}/${session.id}`)).json.interval, 20);
  await oauth.whenPolled(session.userCode, 5);
  const later = (await svc.request('GET', `${SESSIONS}/${session.id}`)).json;
  assert.deepEqual([later.state, later.interval], ['polling', 20]);
  assert.equal((await svc.request('DELETE', `${SESSIONS}/${session.id}`)).json.state, 'cancelled');
});

test(
  'access_denied fails, expired_token and local expiry expire, a refusal or an odd answer fails: each ' + 'cleanly',
  async () => {
    const denied = await start();
    await oauth.whenPolled(denied.userCode, 1);
    oauth.deny(denied.userCode);
    assert.deepEqual((await ended(denied.id)).failure?.code, 'access_denied');
    assert.equal((await svc.request('GET', `${SESSIONS}/${denied.id}`)).json.state, 'failed');

    const expired = await start();
    oauth.expire(expired.userCode);
    const e = await ended(expired.id);
    assert.deepEqual([e.state, e.failure.code], ['expired', 'expired_token']);

    // Expiry the service sees itself: the code outlives no poll (1 s here is 20 ms, the interval 100 ms).
    oauth.setIssue({ expiresIn: 1 });
    const local = await start();
    const l = await ended(local.id);
    assert.deepEqual([l.state, l.failure.code], ['expired', 'expired']);
    assert.equal(oauth.grant(local.userCode).polls, 0);

    oauth.setIssue({ extra: { verification_uri: 'http://phish.example/login/device' } });
    const odd = await start();
    assert.deepEqual(
      [odd.state, odd.failure.code, odd.userCode, odd.verificationUri],
      ['failed', 'malformed', null, null],
    );
    oauth.setIssue({ expiresIn: 900 });
    oauth.failNext(200, '<html>busy</html>', { 'content-type': 'text/html' });
    assert.deepEqual((await start()).failure.code, 'malformed');

    await setClient({ clientId: 'Ov23liWRONGCLIENT', baseUrl: oauth.origin });
    const refused = await start();
    assert.equal(refused.state, 'failed');
    assert.equal(refused.failure.code, 'refused');
    assert.match(refused.failure.message, /incorrect_client_credentials/);
    await setClient({ clientId: CLIENT_ID, baseUrl: oauth.origin });
  },
);

test('DELETE cancels: the session answers cancelled and its polling stops while another session polls on', async () => {
  oauth.setIssue({ interval: 10 });
  const cancelled = await start();
  oauth.setIssue({ interval: 5 });
  const other = await start();
  await oauth.whenPolled(cancelled.userCode, 1);
  const reply = await svc.request('DELETE', `${SESSIONS}/${cancelled.id}`);
  assert.equal(reply.status, 200);
  assert.deepEqual([reply.json.state, reply.json.failure], ['cancelled', null]);
  const polls = oauth.grant(cancelled.userCode).polls;
  // Three more polls of the other session span more than the cancelled one's interval.
  await oauth.whenPolled(other.userCode, oauth.grant(other.userCode).polls + 3);
  assert.equal(oauth.grant(cancelled.userCode).polls, polls);
  assert.equal((await svc.request('DELETE', `${SESSIONS}/${cancelled.id}`)).json.state, 'cancelled');
  assert.equal((await svc.request('DELETE', `${SESSIONS}/${other.id}`)).json.state, 'cancelled');
});

test('no device code or token appears in any response, log line or file but the vault', async () => {
  await svc.stop();
  const secrets = [...TOKENS, ...oauth.grants.map((g) => g.deviceCode)];
  assert.ok(oauth.grants.length >= 8);
  assert.match(svc.log(), /gauge auth session ended/);
  assertSecretsNowhere(svc, secrets);
});
