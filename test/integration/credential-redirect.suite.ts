import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// W3.5 item 1: a `manage` token cannot read a stored credential, so it must not be able to re-point the
// record that holds one (a provider's baseUrl, a Gauge account's config.baseUrl) at a host it controls and
// have the service deliver the key there. Moving a stored credential needs `admin`, or the same write
// supplies a credential of its own.

const PROVIDER_KEY = `zz-stored-provider-key-${process.pid}`;
const ADMIN_KEY = `zz-stored-gauge-admin-key-${process.pid}`;

interface Catcher {
  url: string;
  seen: IncomingHttpHeaders[];
  server: Server;
}

/** The attacker's host: answers every request with an empty model list and keeps the headers it got. */
async function catcher(): Promise<Catcher> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"object":"list","data":[]}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen, server };
}

const sawKey = (c: Catcher, key: string) => c.seen.some((h) => JSON.stringify(h).includes(key));

let svc: InProcessService;
let evil: Catcher;
let manage: string;

before(async () => {
  [svc, evil] = await Promise.all([
    startInProcess({ env: { SWITCHYARD_GAUGE_ALLOWED_HOSTS: 'loopback', SWITCHYARD_GAUGE_TIMEOUT_MS: '5000' } }),
    catcher(),
  ]);
  const created = await svc.request('POST', '/v1/tokens', { body: { name: 'manager', scopes: ['manage'] } });
  assert.equal(created.status, 201, created.text);
  svc.markSecretBearing(created);
  manage = created.json.secret;
  assert.equal(typeof manage, 'string');
});
after(async () => {
  await svc.stop();
  await new Promise((resolve) => evil.server.close(resolve));
  assert.ok(!svc.log().includes(PROVIDER_KEY) && !svc.log().includes(ADMIN_KEY), 'no stored key in the log');
});

describe('a provider record', () => {
  const legit = 'http://127.0.0.1:9/v1';

  before(async () => {
    const created = await svc.request('POST', '/v1/providers', {
      body: { id: 'held', kind: 'openai', baseUrl: legit, credential: PROVIDER_KEY, autoProxyModels: false },
    });
    assert.equal(created.status, 201, created.text);
  });

  test('a manage token cannot move a stored key to another baseUrl; nothing reaches that host', async () => {
    const moved = await svc.request('PATCH', '/v1/providers/held', { token: manage, body: { baseUrl: evil.url } });
    assert.equal(moved.status, 403, moved.text);
    assert.equal(moved.json.error.code, 'FORBIDDEN');
    assert.equal(moved.json.error.param, 'baseUrl');
    assert.equal((await svc.request('GET', '/v1/providers/held')).json.baseUrl, legit);
    await svc.request('POST', '/v1/providers/held/actions/test', { token: manage });
    assert.equal(evil.seen.length, 0);
    // Other fields stay the manager's to change.
    assert.equal(
      (await svc.request('PATCH', '/v1/providers/held', { token: manage, body: { displayName: 'Held' } })).status,
      200,
    );
  });

  test('with its own credential in the same write, a manage token may move it: the stored key never goes', async () => {
    const own = `zz-managers-own-key-${process.pid}`;
    const moved = await svc.request('PATCH', '/v1/providers/held', {
      token: manage,
      body: { baseUrl: evil.url, credential: own },
    });
    assert.equal(moved.status, 200, moved.text);
    await svc.request('POST', '/v1/providers/held/actions/test', { token: manage });
    assert.ok(sawKey(evil, own), 'the new key went to the new address');
    assert.ok(!sawKey(evil, PROVIDER_KEY));
  });

  test('an admin token may move a stored key; a record without one is anyone-with-manage to move', async () => {
    assert.equal((await svc.request('PATCH', '/v1/providers/held', { body: { baseUrl: legit } })).status, 200);
    assert.equal((await svc.request('PATCH', '/v1/providers/held', { body: { credential: null } })).status, 200);
    assert.equal(
      (await svc.request('PATCH', '/v1/providers/held', { token: manage, body: { baseUrl: evil.url } })).status,
      200,
    );
  });
});

describe('a Gauge account', () => {
  let id: string;

  before(async () => {
    assert.equal((await svc.request('PATCH', '/v1/settings', { body: { gauge: { enabled: true } } })).status, 200);
    const created = await svc.request('POST', '/v1/gauge/accounts', {
      body: {
        providerId: 'openai',
        authMode: 'admin_key',
        credential: ADMIN_KEY,
        enabled: false,
        config: { baseUrl: 'http://127.0.0.1:9' },
      },
    });
    assert.equal(created.status, 201, created.text);
    id = created.json.id;
  });

  test(
    'a manage token cannot move its stored admin key, through either route; a refresh sends nothing ' + 'there',
    async () => {
      const before = evil.seen.length;
      const patched = await svc.request('PATCH', `/v1/gauge/accounts/${id}`, {
        token: manage,
        body: { enabled: true, config: { baseUrl: evil.url } },
      });
      assert.equal(patched.status, 403, patched.text);
      assert.equal(patched.json.error.param, 'config.baseUrl');
      const put = await svc.request('PUT', `/v1/gauge/sources/${id}`, {
        token: manage,
        body: { config: { baseUrl: evil.url } },
      });
      assert.equal(put.status, 403, put.text);
      // The refused writes changed nothing: the account is still disabled and still points where it did.
      const account = (await svc.request('GET', '/v1/gauge/accounts')).json.data.find(
        (a: { id: string }) => a.id === id,
      );
      assert.equal(account.enabled, false);
      assert.equal(
        (await svc.request('PATCH', `/v1/gauge/accounts/${id}`, { token: manage, body: { enabled: true } })).status,
        200,
      );
      await svc.request('POST', '/v1/gauge/refresh', { token: manage, body: { sourceIds: [id] } });
      assert.equal(evil.seen.length, before);
      assert.ok(!sawKey(evil, ADMIN_KEY));
    },
  );

  test('an admin token may move it', async () => {
    const moved = await svc.request('PATCH', `/v1/gauge/accounts/${id}`, {
      body: { config: { baseUrl: 'http://127.0.0.1:10' } },
    });
    assert.equal(moved.status, 200, moved.text);
  });
});
