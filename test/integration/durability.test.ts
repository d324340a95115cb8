import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import * as openaiFake from '../fakes/openai.ts';
import { assertSecretsNowhere, startService, tempHome, type TestService } from '../helpers/service.ts';
import { UWS_ENV } from '../helpers/edge-threads.ts';

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

  test('kill -9 right after the 201s of token creations spread over two edge threads loses none', async () => {
    const home = tempHome();
    const first = await startService({ home, env: { SWITCHYARD_EDGE_THREADS: '2', ...UWS_ENV } });
    const uws = first.logLines().some((l) => l.msg === 'native uWebSockets.js binary loaded');
    // Each request on a connection of its own (the helper's): sixteen spread over both threads all but surely.
    const names = Array.from({ length: 16 }, (_, i) => `edge-${i}`);
    const replies = [];
    for (const name of names) {
      const reply = await first.request('POST', '/v1/tokens', { body: { name } });
      assert.equal(reply.status, 201, reply.text);
      first.markSecretBearing(reply);
      replies.push(reply);
    }
    const ids = new Set(replies.map((r) => r.headers['x-request-id']));
    const lines = () => first.logLines().filter((l) => l.msg === 'request' && ids.has(l.reqId as string));
    await until(() => lines().length === ids.size, 'every request line');
    if (uws) assert.deepEqual([...new Set(lines().map((l) => l.edgeThread ?? 0))].sort(), [0, 1]);
    await first.kill9();

    const second = await startService({ home });
    try {
      const tokens = (await second.request('GET', '/v1/tokens')).json.data.map((t: { name: string }) => t.name);
      for (const name of names) assert.ok(tokens.includes(name), `${name} survived`);
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

  test('with two edge threads, SIGTERM stops both and exits 0 while clients keep idle connections open', async () => {
    const svc = await startService({ env: { SWITCHYARD_EDGE_THREADS: '2', ...UWS_ENV } });
    const uws = svc.logLines().some((l) => l.msg === 'native uWebSockets.js binary loaded');
    // Keep-alive connections, each answered once and then left open and idle, as agents leave theirs: each thread
    // closes its own at the stop, and a thread stopped with one open would abort the process.
    const sockets = await Promise.all(
      Array.from({ length: 16 }, async () => {
        const socket = connect(svc.port, '127.0.0.1');
        let received = '';
        socket.on('data', (d) => (received += d.toString()));
        await new Promise<void>((resolve) => socket.on('connect', () => resolve()));
        socket.write(`GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${svc.adminToken}\r\n\r\n`);
        await until(() => received.includes('"data"'), 'an answer');
        return socket;
      }),
    );
    const lines = () => svc.logLines().filter((l) => l.msg === 'request' && l.route === 'GET /v1/models');
    await until(() => lines().length === sockets.length, 'every request line');
    // Sixteen connections: the kernel gives them all to one thread 2 times in 65,536.
    if (uws) assert.deepEqual([...new Set(lines().map((l) => l.edgeThread ?? 0))].sort(), [0, 1]);
    assert.equal(await svc.stop('SIGTERM'), 0);
    assert.doesNotMatch(svc.stderr(), /Assertion failed|open handles/);
    assert.ok(svc.logLines().some((l) => l.msg === 'stopped'));
    for (const socket of sockets) socket.destroy();
  });
});

/** Resolves once `holds()` is true, looking again every few milliseconds; throws after 10 s. */
async function until(holds: () => boolean, what: string): Promise<void> {
  for (const deadline = Date.now() + 10_000; !holds(); ) {
    if (Date.now() > deadline) throw new Error(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('limit counters across kill -9', () => {
  test('no settled usage is lost; calls in flight count nothing; nothing is left reserved', async () => {
    const KEY = `fake-openai-key-${process.pid}`;
    const oa = await openaiFake.start({ apiKey: KEY });
    oa.setModels([{ id: 'gpt-limit' }]);
    // 110 tokens a call; each reserves its body's bytes over 3 plus max_tokens.
    const PER_CALL = 110;
    oa.setUsage({ inputTokens: 10, outputTokens: 100 });
    const ask = { model: 'oa/gpt-limit', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };
    const need = Math.ceil(Buffer.byteLength(JSON.stringify(ask)) / 3) + 100;
    const MAX = 1000;
    const home = tempHome();
    const first = await startService({ home });
    let second: TestService | undefined;
    try {
      const made = async (svc: TestService, path: string, body: unknown) => {
        const reply = await svc.request('POST', path, { body });
        assert.equal(reply.status, 201, reply.text);
        return reply;
      };
      await made(first, '/v1/providers', { id: 'oa', kind: 'openai', baseUrl: oa.baseUrl, credential: KEY });
      assert.equal((await first.request('POST', '/v1/providers/oa/actions/refresh-models')).status, 200);
      const created = await made(first, '/v1/tokens', { name: 'agent', scopes: ['inference'] });
      first.markSecretBearing(created);
      const agent = { id: created.json.token.id as string, secret: created.json.secret as string };
      const scope = { kind: 'token', id: agent.id };
      const limit = { name: 'tokens', scope, window: 'day', metric: 'total_tokens', max: MAX };
      const limitId = (await made(first, '/v1/limits', limit)).json.id as string;
      const call = (svc: TestService) =>
        svc.request('POST', '/v1/chat/completions', { body: ask, token: agent.secret });

      for (let i = 0; i < 3; i++) assert.equal((await call(first)).status, 200);
      const settled = 3 * PER_CALL;
      // Killed at once, long before the counters' snapshot (about once a second) is due: the journal has them.
      // Three calls whose upstream never answers: admitted, reserved, and in flight when the service dies.
      const IN_FLIGHT = 3;
      for (let i = 0; i < IN_FLIGHT; i++) oa.hangNext();
      const upstream = oa.requests.length;
      const flying = Array.from({ length: IN_FLIGHT }, () => call(first).catch((err: unknown) => err));
      await until(() => oa.requests.length - upstream === IN_FLIGHT, 'the calls reached the upstream');
      const [held] = (await first.request('GET', `/v1/limits/${limitId}`)).json.counters;
      assert.deepEqual([held.used, held.reserved], [settled, IN_FLIGHT * need]);
      await first.kill9();
      for (const outcome of await Promise.all(flying)) assert.ok(outcome instanceof Error, 'no answer after kill -9');

      second = await startService({ home });
      const view = async () => (await second!.request('GET', `/v1/limits/${limitId}`)).json.counters[0];
      const after = await view();
      assert.equal(after.used, settled, 'every settled call, and none of those in flight');
      assert.equal(after.reserved, 0);
      // The limit goes on from there: calls are admitted while what was used plus one's worst case fits.
      let expected = 0;
      for (let used = after.used; used + need <= MAX; used += PER_CALL) expected++;
      const before = oa.requests.length;
      for (let i = 0; i < expected; i++) assert.equal((await call(second)).status, 200);
      const refused = await call(second);
      assert.equal(refused.status, 429, refused.text);
      assert.equal(refused.json.error.code, 'LIMIT_EXCEEDED');
      assert.equal(oa.requests.length - before, expected);
      assert.deepEqual(await view().then((c) => [c.used, c.reserved]), [after.used + expected * PER_CALL, 0]);
      assert.equal(await second.stop(), 0);
      // Stored counters cover the journal's past generations, which are gone: one file, the last one opened.
      assert.equal(readdirSync(join(home, 'limit-journal')).length, 1);
      // Neither the agent's token nor the provider's key is in a response, a log or a file of the store.
      for (const svc of [first, second]) assertSecretsNowhere(svc, [agent.secret, KEY]);
    } finally {
      await first.kill9();
      await second?.stop();
      await oa.close();
    }
  });

  test('two edge threads admit and settle under one limit, and a kill -9 loses no settlement of either', async () => {
    const KEY = `fake-openai-key-${process.pid}-threads`;
    const oa = await openaiFake.start({ apiKey: KEY });
    oa.setModels([{ id: 'gpt-limit' }]);
    const PER_CALL = 110;
    oa.setUsage({ inputTokens: 10, outputTokens: 100 });
    const ask = { model: 'oa/gpt-limit', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };
    const need = Math.ceil(Buffer.byteLength(JSON.stringify(ask)) / 3) + 100;
    const CALLS = 16;
    // Room for the sixteen calls and three more worst cases, not four.
    const MAX = CALLS * PER_CALL + 3 * need + 1;
    const home = tempHome();
    const first = await startService({ home, env: { SWITCHYARD_EDGE_THREADS: '2', ...UWS_ENV } });
    const uws = first.logLines().some((l) => l.msg === 'native uWebSockets.js binary loaded');
    let second: TestService | undefined;
    try {
      const provider = { id: 'oa', kind: 'openai', baseUrl: oa.baseUrl, credential: KEY };
      assert.equal((await first.request('POST', '/v1/providers', { body: provider })).status, 201);
      assert.equal((await first.request('POST', '/v1/providers/oa/actions/refresh-models')).status, 200);
      const limit = { name: 'tokens', scope: { kind: 'service' }, window: 'day', metric: 'total_tokens', max: MAX };
      const made = await first.request('POST', '/v1/limits', { body: limit });
      assert.equal(made.status, 201, made.text);
      const limitId = made.json.id as string;
      // Each call on a connection of its own (the helper's): sixteen spread over both threads all but surely.
      const ids = new Set<string>();
      for (let i = 0; i < CALLS; i++) {
        const reply = await first.request('POST', '/v1/chat/completions', { body: ask });
        assert.equal(reply.status, 200, reply.text);
        ids.add(reply.headers['x-request-id']!);
      }
      const lines = () => first.logLines().filter((l) => l.msg === 'request' && ids.has(l.reqId as string));
      await until(() => lines().length === CALLS, 'every request line');
      if (uws) assert.deepEqual([...new Set(lines().map((l) => l.edgeThread ?? 0))].sort(), [0, 1]);
      await first.kill9();

      second = await startService({ home, env: { SWITCHYARD_EDGE_THREADS: '2', ...UWS_ENV } });
      const [counter] = (await second.request('GET', `/v1/limits/${limitId}`)).json.counters;
      assert.deepEqual([counter.used, counter.reserved], [CALLS * PER_CALL, 0], 'every settled call of both threads');
      // Three more fit, the fourth does not, whichever thread serves it.
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++)
        statuses.push((await second.request('POST', '/v1/chat/completions', { body: ask })).status);
      assert.deepEqual(statuses, [200, 200, 200, 429]);
      assert.equal(await second.stop(), 0);
      for (const svc of [first, second]) assertSecretsNowhere(svc, [KEY]);
    } finally {
      await first.kill9();
      await second?.stop();
      await oa.close();
    }
  });
});
