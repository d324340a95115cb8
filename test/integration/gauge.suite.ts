import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Gauge's routes end to end on one service: opt-in, setup while opted out, every 400/404/409 of the contract,
// refresh (one at a time) against a loopback status page the test holds open, readings, history, deletion.
// SWITCHYARD_GAUGE_ALLOWED_HOSTS=loopback: no source of this service can reach anything but 127.0.0.1.

let svc: InProcessService;
let statusPage: Server;
let statusUrl: string;
const held: ServerResponse[] = [];
let requestArrived: () => void = () => undefined;

const SUMMARY = {
  page: {
    id: 'p1',
    name: 'Example',
    url: 'http://127.0.0.1',
    time_zone: 'Etc/UTC',
    updated_at: '2026-11-24T12:00:00.000Z',
  },
  status: { indicator: 'minor', description: 'Partially Degraded Service' },
  components: [
    {
      id: 'c1',
      name: 'API',
      status: 'degraded_performance',
      position: 1,
      description: null,
      showcase: true,
      start_date: null,
      group_id: null,
      page_id: 'p1',
      group: false,
      only_show_if_degraded: false,
      created_at: '2026-11-24T12:00:00.000Z',
      updated_at: '2026-11-24T12:00:00.000Z',
    },
  ],
  incidents: [],
  scheduled_maintenances: [],
};

before(async () => {
  // A Statuspage-compatible page that holds each request until the test answers it.
  statusPage = createServer((_req, res) => {
    held.push(res);
    requestArrived();
  });
  statusPage.listen(0, '127.0.0.1');
  await once(statusPage, 'listening');
  statusUrl = `http://127.0.0.1:${(statusPage.address() as AddressInfo).port}`;
  svc = await startInProcess({
    env: { SWITCHYARD_GAUGE_ALLOWED_HOSTS: 'loopback', SWITCHYARD_GAUGE_TIMEOUT_MS: '10000' },
  });
});
after(async () => {
  await svc.stop();
  for (const res of held) res.destroy();
  statusPage.close();
});

const body = (b: unknown) => ({ body: b });
async function expectError(
  method: string,
  path: string,
  status: number,
  code: string,
  options: { body?: unknown; token?: string } = {},
) {
  const reply = await svc.request(method, path, options);
  assert.equal(reply.status, status, `${method} ${path}: ${reply.text}`);
  assert.equal(reply.json.error.code, code, `${method} ${path}: ${reply.text}`);
  return reply;
}
const setGauge = async (enabled: boolean) =>
  assert.equal((await svc.request('PATCH', '/v1/settings', body({ gauge: { enabled } }))).status, 200);

let accountId: string;

describe('while opted out', () => {
  test(
    'collected data answers enabled=false and nothing; refresh is 409 GAUGE_DISABLED; capabilities list ' + 'Gauge',
    async () => {
      const dash = await svc.request('GET', '/v1/gauge');
      assert.equal(dash.status, 200);
      assert.deepEqual(
        { ...dash.json, since: undefined },
        {
          enabled: false,
          since: undefined,
          accounts: [],
          readings: [],
          statuses: [],
          history: [],
          historyTruncated: false,
        },
      );
      for (const path of ['/v1/gauge/readings', '/v1/gauge/statuses', '/v1/gauge/diagnostics']) {
        const reply = await svc.request('GET', path);
        assert.equal(reply.status, 200, path);
        assert.equal(reply.json.enabled, false, path);
        assert.deepEqual(reply.json.data, [], path);
      }
      await expectError('POST', '/v1/gauge/refresh', 409, 'GAUGE_DISABLED', body({}));
      const caps = await svc.request('GET', '/v1/capabilities');
      assert.equal(caps.json.features.gauge, true);
    },
  );

  test('setup works before opting in: the provider catalog, built-in sources, and a new account', async () => {
    const providers = await svc.request('GET', '/v1/gauge/providers');
    assert.equal(providers.status, 200);
    const ids = providers.json.data.map((p: { id: string }) => p.id);
    assert.deepEqual(ids.slice(0, 4), ['openai', 'anthropic', 'openrouter', 'github-copilot']);
    const gemini = providers.json.data.find((p: { id: string }) => p.id === 'google-gemini');
    assert.deepEqual(gemini, {
      id: 'google-gemini',
      displayName: 'Google Gemini',
      authModes: [],
      capabilities: [],
      connectable: false,
    });
    assert.ok(
      providers.json.data
        .filter((p: { id: string }) => p.id !== 'google-gemini' && p.id !== 'mistral')
        .every((p: { connectable: boolean }) => p.connectable),
    );

    const sources = await svc.request('GET', '/v1/gauge/sources');
    const byId = new Map(sources.json.data.map((s: { id: string }) => [s.id, s]));
    assert.deepEqual(
      [...byId.keys()],
      ['service', 'live-headers', 'status-openai', 'status-anthropic', 'status-github-copilot', 'claude-code', 'codex'],
    );
    const enabled = sources.json.data.filter((s: { enabled: boolean }) => s.enabled).map((s: { id: string }) => s.id);
    assert.deepEqual(enabled, ['service', 'live-headers'], 'status pages and local logs start disabled');

    const created = await svc.request(
      'POST',
      '/v1/gauge/accounts',
      body({
        providerId: 'openai',
        authMode: 'admin_key',
        label: 'Team (ops@example.com)',
        credential: `sk-admin-opted-out-${process.pid}`,
        enabled: false,
      }),
    );
    assert.equal(created.status, 201, created.text);
    accountId = created.json.id;
    assert.deepEqual(
      { ...created.json, id: undefined },
      {
        id: undefined,
        providerId: 'openai',
        authMode: 'admin_key',
        label: 'Team (@example.com)',
        enabled: false,
        builtIn: false,
        credentialConfigured: true,
        status: { auth: 'configured', collection: 'disabled' },
        lastReadingAt: null,
      },
    );
    const accounts = await svc.request('GET', '/v1/gauge/accounts');
    assert.deepEqual(
      accounts.json.data.map((a: { id: string }) => a.id),
      ['service', 'claude-code', 'codex', accountId],
    );
  });
});

describe('bad input', () => {
  test(
    'account writes: 400 for bodies, 404 for an adapter or account that does not exist, 400 to delete a ' + 'built-in',
    async () => {
      await expectError('POST', '/v1/gauge/accounts', 400, 'INVALID_REQUEST', body({}));
      await expectError(
        'POST',
        '/v1/gauge/accounts',
        400,
        'INVALID_JSON',
        body({ providerId: 'openai', authMode: 'admin_key', apiKey: 'x' }),
      );
      await expectError('POST', '/v1/gauge/accounts', 400, 'INVALID_JSON', { body: '{"providerId":"openai",' });
      await expectError(
        'POST',
        '/v1/gauge/accounts',
        400,
        'INVALID_REQUEST',
        body({ providerId: 'openai', authMode: 'password' }),
      );
      await expectError(
        'POST',
        '/v1/gauge/accounts',
        400,
        'INVALID_REQUEST',
        body({ providerId: 'x'.repeat(161), authMode: 'api_key' }),
      );
      await expectError(
        'POST',
        '/v1/gauge/accounts',
        400,
        'INVALID_REQUEST',
        body({ providerId: 'openai', authMode: 'admin_key', label: 'x'.repeat(201) }),
      );
      const paths = await expectError(
        'POST',
        '/v1/gauge/accounts',
        400,
        'INVALID_REQUEST',
        body({ providerId: 'openai', authMode: 'admin_key', config: { paths: ['/tmp'] } }),
      );
      assert.equal(paths.json.error.param, 'config.paths');
      await expectError(
        'POST',
        '/v1/gauge/accounts',
        400,
        'INVALID_REQUEST',
        body({ providerId: 'openai', authMode: 'admin_key', config: { baseUrl: 'ftp://example.com' } }),
      );
      await expectError(
        'POST',
        '/v1/gauge/accounts',
        400,
        'INVALID_REQUEST',
        body({ providerId: 'openai', authMode: 'admin_key', config: { baseUrl: 'https://u:p@example.com' } }),
      );
      for (const [providerId, authMode] of [
        ['nope', 'api_key'],
        ['github-copilot', 'oauth_device'],
        ['google-gemini', 'api_key'],
        ['service', 'none'],
        ['openai', 'api_key'],
      ]) {
        await expectError('POST', '/v1/gauge/accounts', 404, 'NOT_FOUND', body({ providerId, authMode }));
      }
      await expectError('PATCH', '/v1/gauge/accounts/acct_nope', 404, 'NOT_FOUND', body({ enabled: true }));
      await expectError(
        'PATCH',
        `/v1/gauge/accounts/${'a'.repeat(161)}`,
        400,
        'INVALID_REQUEST',
        body({ enabled: true }),
      );
      await expectError('PATCH', '/v1/gauge/accounts/status-openai', 404, 'NOT_FOUND', body({ enabled: true }));
      await expectError(
        'PATCH',
        '/v1/gauge/accounts/service',
        400,
        'INVALID_REQUEST',
        body({ credential: 'sk-not-for-this-source' }),
      );
      await expectError(
        'PATCH',
        `/v1/gauge/accounts/${accountId}`,
        400,
        'INVALID_JSON',
        body({ providerId: 'anthropic' }),
      );
      await expectError('DELETE', '/v1/gauge/accounts/service', 400, 'INVALID_REQUEST');
      await expectError('DELETE', '/v1/gauge/accounts/status-openai', 400, 'INVALID_REQUEST');
      await expectError('DELETE', '/v1/gauge/accounts/acct_nope', 404, 'NOT_FOUND');
    },
  );

  test(
    'source writes: 404 unknown, 400 for a key or credential the source does not take; null restores a ' + 'default',
    async () => {
      await expectError('PUT', '/v1/gauge/sources/nope', 404, 'NOT_FOUND', body({ enabled: true }));
      await expectError('PUT', `/v1/gauge/sources/${'s'.repeat(161)}`, 400, 'INVALID_REQUEST', body({}));
      await expectError('PUT', '/v1/gauge/sources/service', 400, 'INVALID_REQUEST', body({ enabled: 'yes' }));
      await expectError('PUT', '/v1/gauge/sources/service', 400, 'INVALID_JSON', body({ label: 'x' }));
      await expectError(
        'PUT',
        '/v1/gauge/sources/status-openai',
        400,
        'INVALID_REQUEST',
        body({ credential: 'sk-nothing-to-read' }),
      );
      assert.equal(
        (
          await expectError(
            'PUT',
            '/v1/gauge/sources/service',
            400,
            'INVALID_REQUEST',
            body({ config: { baseUrl: 'http://127.0.0.1:1' } }),
          )
        ).json.error.param,
        'config.baseUrl',
      );
      await expectError(
        'PUT',
        '/v1/gauge/sources/claude-code',
        400,
        'INVALID_REQUEST',
        body({ config: { paths: ['relative/dir'] } }),
      );
      await expectError(
        'PUT',
        '/v1/gauge/sources/claude-code',
        400,
        'INVALID_REQUEST',
        body({ config: { paths: Array.from({ length: 9 }, (_, i) => `/p${i}`) } }),
      );
      const moved = await svc.request(
        'PUT',
        '/v1/gauge/sources/status-anthropic',
        body({ config: { baseUrl: 'http://127.0.0.1:9/' } }),
      );
      assert.equal(moved.json.config.baseUrl, 'http://127.0.0.1:9');
      const restored = await svc.request(
        'PUT',
        '/v1/gauge/sources/status-anthropic',
        body({ config: { baseUrl: null } }),
      );
      assert.equal(restored.json.config.baseUrl, 'https://status.anthropic.com');
      assert.equal(restored.json.enabled, false);
    },
  );

  test('queries: limits are rejected, not clamped; unknown parameters and bad date-times are 400', async () => {
    for (const query of [
      'limit=0',
      'limit=201',
      'limit=x',
      'offset=-1',
      'offset=1000001',
      'after=yesterday',
      'before=2026-13-01T00:00:00Z',
      'accountId=' + 'a'.repeat(161),
      'providerId=',
      'page=2',
      'limit=5&limit=6',
    ]) {
      await expectError('GET', `/v1/gauge/readings?${query}`, 400, 'INVALID_REQUEST');
    }
    assert.equal((await svc.request('GET', '/v1/gauge/readings?limit=200&offset=1000000')).status, 200);
    await expectError('GET', '/v1/gauge?since=last-week', 400, 'INVALID_REQUEST');
    await expectError('GET', '/v1/gauge/providers?x=1', 400, 'INVALID_REQUEST');
    await expectError('DELETE', '/v1/gauge/history?sourceId=', 400, 'INVALID_REQUEST');
    await expectError('DELETE', `/v1/gauge/history?sourceId=${'s'.repeat(161)}`, 400, 'INVALID_REQUEST');
    await expectError('DELETE', '/v1/gauge/history?sourceId=nope', 404, 'NOT_FOUND');
  });

  test('refresh bodies: 400 for shape, 404 for an unknown source (before the opt-in check)', async () => {
    await expectError('POST', '/v1/gauge/refresh', 400, 'INVALID_REQUEST', body({ sourceIds: [] }));
    await expectError('POST', '/v1/gauge/refresh', 400, 'INVALID_REQUEST', body({ sourceIds: ['service', 'service'] }));
    await expectError('POST', '/v1/gauge/refresh', 400, 'INVALID_REQUEST', body({ sourceIds: 'service' }));
    await expectError('POST', '/v1/gauge/refresh', 400, 'INVALID_JSON', body({ all: true }));
    const unknown = await expectError(
      'POST',
      '/v1/gauge/refresh',
      404,
      'NOT_FOUND',
      body({ sourceIds: ['service', 'nope'] }),
    );
    assert.equal(unknown.json.error.param, 'sourceIds[1]');
  });

  test('scopes: a read token reads Gauge and cannot change it', async () => {
    const created = await svc.request('POST', '/v1/tokens', body({ name: 'reader', scopes: ['read'] }));
    svc.markSecretBearing(created);
    const token = created.json.secret;
    assert.equal((await svc.request('GET', '/v1/gauge/sources', { token })).status, 200);
    await expectError('PUT', '/v1/gauge/sources/service', 403, 'FORBIDDEN', { token, body: { enabled: false } });
    await expectError('POST', '/v1/gauge/refresh', 403, 'FORBIDDEN', { token, body: {} });
    await expectError('DELETE', '/v1/gauge/history', 403, 'FORBIDDEN', { token });
  });
});

describe('opted in', () => {
  before(() => setGauge(true));

  test('refresh of every enabled source: the service source reports, in display order', async () => {
    const reply = await svc.request('POST', '/v1/gauge/refresh', body({}));
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(
      reply.json.data.map((o: { sourceId: string; ok: boolean }) => [o.sourceId, o.ok]),
      [
        ['service', true],
        ['live-headers', true],
      ],
    );
    assert.equal(reply.json.data[0].readings, 1);
    await expectError('POST', '/v1/gauge/refresh', 409, 'CONFLICT', body({ sourceIds: [accountId] }));
    await expectError('POST', '/v1/gauge/refresh', 409, 'CONFLICT', body({ sourceIds: ['status-openai'] }));
  });

  test('one refresh at a time: a second one while a status page is held open is 409 CONFLICT', async () => {
    const put = await svc.request(
      'PUT',
      '/v1/gauge/sources/status-openai',
      body({ enabled: true, config: { baseUrl: statusUrl } }),
    );
    assert.equal(put.status, 200, put.text);
    const arrived = new Promise<void>((resolve) => (requestArrived = resolve));
    const first = svc.request('POST', '/v1/gauge/refresh', body({ sourceIds: ['status-openai', 'service'] }));
    await arrived;
    const second = await expectError('POST', '/v1/gauge/refresh', 409, 'CONFLICT', body({ sourceIds: ['service'] }));
    assert.match(second.json.error.message, /already running/);
    const res = held.shift()!;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(SUMMARY));
    const done = await first;
    assert.equal(done.status, 200, done.text);
    assert.deepEqual(
      done.json.data.map((o: { sourceId: string; ok: boolean }) => [o.sourceId, o.ok]),
      [
        ['status-openai', true],
        ['service', true],
      ],
    );
    const statuses = await svc.request('GET', '/v1/gauge/statuses');
    const openai = statuses.json.data.find((s: { providerId: string }) => s.providerId === 'openai');
    assert.equal(openai.indicator, 'minor');
    assert.deepEqual(openai.components, [{ name: 'API', status: 'degraded_performance' }]);
    assert.ok(
      statuses.json.accounts.some(
        (a: { accountId: string; collection: string }) => a.accountId === 'service' && a.collection === 'ok',
      ),
    );
    // Off again, so the scheduler never calls the held page behind the test's back.
    assert.equal((await svc.request('PUT', '/v1/gauge/sources/status-openai', body({ enabled: false }))).status, 200);
  });

  test(
    'readings are the latest per account, filtered and paged newest first; the dashboard carries ' + 'history',
    async () => {
      const all = await svc.request('GET', '/v1/gauge/readings');
      assert.equal(all.json.enabled, true);
      const service = all.json.data.find((r: { accountId: string }) => r.accountId === 'service');
      assert.equal(service.providerId, 'service');
      assert.deepEqual(
        service.windows.map((w: { id: string }) => w.id),
        ['requests-day', 'tokens-day', 'tokens-month'],
      );
      assert.equal(service.spend.currency, 'USD');
      assert.equal((await svc.request('GET', '/v1/gauge/readings?providerId=service')).json.data.length, 1);
      assert.equal((await svc.request('GET', '/v1/gauge/readings?accountId=nope')).json.data.length, 0);
      assert.equal(
        (
          await svc.request(
            'GET',
            `/v1/gauge/readings?after=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
          )
        ).json.data.length,
        0,
      );
      const page = await svc.request('GET', '/v1/gauge/readings?limit=1&offset=0');
      assert.equal(page.json.data.length, 1);
      assert.equal(page.json.limit, 1);
      assert.equal((await svc.request('GET', '/v1/gauge/readings?offset=50')).json.data.length, 0);

      const dash = await svc.request('GET', '/v1/gauge');
      assert.equal(dash.json.enabled, true);
      assert.ok(dash.json.history.some((h: { accountId: string }) => h.accountId === 'service'));
      assert.ok(
        dash.json.accounts.some(
          (a: { id: string; lastReadingAt: string | null }) => a.id === 'service' && a.lastReadingAt !== null,
        ),
      );
      const future = await svc.request(
        'GET',
        `/v1/gauge?since=${encodeURIComponent(new Date(Date.now() + 2 * 3_600_000).toISOString())}`,
      );
      assert.deepEqual(future.json.history, []);
    },
  );

  test('diagnostics: bounded state per source with hashed account references', async () => {
    const diag = await svc.request('GET', '/v1/gauge/diagnostics');
    const service = diag.json.data.find((d: { sourceId: string }) => d.sourceId === 'service');
    assert.equal(service.lastOutcome, 'ok');
    assert.equal(service.consecutiveFailures, 0);
    assert.ok(Date.parse(service.nextRunAt) > Date.parse(service.lastSuccessAt));
    assert.match(service.accountRef, /^ref_[0-9a-f]{16}$/);
    const account = diag.json.data.find((d: { sourceId: string }) => d.sourceId === accountId);
    assert.ok(!account.accountRef.includes(accountId));
  });

  test(
    'DELETE /history counts snapshots and keeps readings and setup; deleting an account removes its ' + 'share',
    async () => {
      const one = await svc.request('DELETE', '/v1/gauge/history?sourceId=service');
      assert.equal(one.status, 200);
      assert.ok(one.json.deleted >= 1);
      assert.equal((await svc.request('DELETE', '/v1/gauge/history?sourceId=service')).json.deleted, 0);
      assert.equal(
        (await svc.request('GET', '/v1/gauge/readings?accountId=service')).json.data.length,
        1,
        'current readings stay',
      );
      assert.equal(typeof (await svc.request('DELETE', '/v1/gauge/history')).json.deleted, 'number');

      const patched = await svc.request(
        'PATCH',
        `/v1/gauge/accounts/${accountId}`,
        body({ credential: null, label: 'Renamed' }),
      );
      assert.equal(patched.status, 200);
      assert.equal(patched.json.credentialConfigured, false);
      assert.equal(patched.json.status.auth, 'missing');
      const removed = await svc.request('DELETE', `/v1/gauge/accounts/${accountId}`);
      assert.deepEqual(removed.json, { id: accountId, deleted: true });
      await expectError('PATCH', `/v1/gauge/accounts/${accountId}`, 404, 'NOT_FOUND', body({ enabled: true }));
      const audit = await svc.request('GET', '/v1/audit-events?resourceType=gauge-account');
      assert.deepEqual(
        audit.json.data.map((e: { action: string }) => e.action),
        ['gauge-account.delete', 'gauge-account.update', 'gauge-account.create'],
      );
    },
  );

  test('opting out again hides what was collected and refuses refresh', async () => {
    await setGauge(false);
    assert.equal((await svc.request('GET', '/v1/gauge')).json.enabled, false);
    assert.deepEqual((await svc.request('GET', '/v1/gauge/readings')).json.data, []);
    await expectError('POST', '/v1/gauge/refresh', 409, 'GAUGE_DISABLED', body({ sourceIds: ['service'] }));
  });

  test('turning Gauge on again refreshes once by itself, not at the next scheduled run', async () => {
    const ranAt = async () =>
      (await svc.request('GET', '/v1/gauge/diagnostics')).json.data.find(
        (d: { sourceId: string }) => d.sourceId === 'service',
      )?.lastRunAt ?? null;
    // The service source ran minutes ago at most: its schedule would run it again only later.
    const since = Date.now();
    await setGauge(true);
    const deadline = Date.now() + 10_000;
    while (Date.parse((await ranAt()) ?? '0') < since && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    assert.ok(Date.parse((await ranAt()) ?? '0') >= since, 'ran again after turning on');
    await setGauge(false);
  });
});
