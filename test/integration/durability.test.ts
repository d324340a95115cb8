import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { startService, tempHome } from '../helpers/service.ts';

describe('restart on the same data directory', () => {
  test('keeps tokens, settings and audit events, and does not mint a second bootstrap token', async () => {
    const home = tempHome();
    const first = await startService({ home });
    const created = await first.request('POST', '/v1/tokens', { body: { name: 'survivor', scopes: ['read'] } });
    const secret = created.json.secret as string;
    await first.request('PATCH', '/v1/settings', {
      body: { cors: { allowedOrigins: ['http://keep.example'] }, usage: { retentionDays: 12 } },
    });
    const auditBefore = (await first.request('GET', '/v1/audit-events')).json.data;
    assert.equal(await first.stop(), 0);

    const second = await startService({ home });
    try {
      assert.equal(second.adminToken, first.adminToken);
      const notices = await second.waitForStderr(/switchyard token/);
      assert.ok(!notices.includes(first.adminToken), 'the secret is printed on the first start only');
      assert.equal((await second.request('GET', '/v1/settings', { token: secret })).status, 200);
      const settings = (await second.request('GET', '/v1/settings')).json;
      assert.deepEqual(settings.cors.allowedOrigins, ['http://keep.example']);
      assert.equal(settings.usage.retentionDays, 12);
      const tokens = (await second.request('GET', '/v1/tokens')).json.data;
      assert.deepEqual(
        tokens.map((t: { name: string }) => t.name),
        ['bootstrap admin', 'survivor'],
      );
      const auditAfter = (await second.request('GET', '/v1/audit-events')).json.data;
      assert.deepEqual(auditAfter, auditBefore);
    } finally {
      await second.stop();
    }
  });

  test('kill -9 right after a 200 from PATCH /v1/settings loses nothing', async () => {
    const home = tempHome();
    const first = await startService({ home });
    const reply = await first.request('PATCH', '/v1/settings', {
      body: { runtime: { tuning: { threads: 3 } }, gauge: { enabled: true } },
    });
    assert.equal(reply.status, 200);
    await first.kill9();

    const second = await startService({ home });
    try {
      const settings = (await second.request('GET', '/v1/settings')).json;
      assert.equal(settings.runtime.tuning.threads, 3);
      assert.equal(settings.gauge.enabled, true);
      const audit = (await second.request('GET', '/v1/audit-events?action=settings.update')).json.data;
      assert.equal(audit.length, 1);
      assert.equal(audit[0].requestId, reply.headers['x-service-request-id']);
    } finally {
      await second.stop();
    }
  });

  test('bind.networkExposed takes effect after the restart, and the Host check is then off', async () => {
    const home = tempHome();
    const first = await startService({ home });
    await first.request('PATCH', '/v1/settings', { body: { bind: { networkExposed: true } } });
    await first.stop();
    const second = await startService({ home });
    try {
      const bind = (await second.request('GET', '/v1/settings')).json.bind;
      assert.deepEqual(bind, {
        host: '0.0.0.0',
        port: second.port,
        networkExposed: true,
        pending: null,
        restartRequired: false,
      });
      const foreign = await second.request('GET', '/health', { token: null, headers: { host: 'gateway.lan:3939' } });
      assert.equal(foreign.status, 200);
      assert.equal((await second.request('GET', '/v1/settings', { token: null })).status, 401, 'tokens still required');
    } finally {
      await second.stop();
    }
  });
});

describe('graceful shutdown', () => {
  test('SIGTERM stops accepting, finishes a request in flight, then exits 0', async () => {
    const svc = await startService();
    const socket = connect(svc.port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.on('connect', () => resolve()));
    let received = '';
    socket.on('data', (d) => (received += d.toString()));
    const body = '{"usage":{"retentionDays":77}}';
    socket.write(
      `PATCH /v1/settings HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${svc.adminToken}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    await new Promise((r) => setTimeout(r, 100));
    const exitCode = svc.stop('SIGTERM');
    // The service says so on stderr as it closes the listener; a probe that still got in means "not yet".
    await svc.waitForStderr(/SIGTERM: finishing in-flight requests/);
    const probe = () =>
      new Promise<boolean>((resolve) => {
        const socket = connect(svc.port, '127.0.0.1');
        socket.on('connect', () => (socket.destroy(), resolve(false)));
        socket.on('error', () => resolve(true));
      });
    // The listener is closed: a new connection is refused while the old request is still open.
    let refused = await probe();
    for (const deadline = Date.now() + 5000; !refused && Date.now() < deadline; ) refused = await probe();
    assert.equal(refused, true);
    socket.write(body.slice(10));
    assert.equal(await exitCode, 0);
    assert.match(received, /^HTTP\/1\.1 200 OK/);
    assert.match(received, /"retentionDays":77/);
    assert.ok(svc.logLines().some((l) => l.msg === 'stopped'));
  });
});
