import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as openaiFake from '../fakes/openai.ts';
import { openLiveStream, type LiveStream } from '../fakes/sse-client.ts';
import { allBytes } from '../helpers/usage.ts';
import { tempHome, type Reply } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Pairing over a real socket (a loopback peer): the requester's stream sees pending and then the outcome, an
// approved token works and its secret reaches nothing but that stream; service accounts own tokens and
// group usage. The expiry is shortened to a few seconds (SWITCHYARD_PAIRING_TTL_MS) so expiry is observable.

const TTL_MS = 3000;
const OPENAI_KEY = `fake-openai-pair-${process.pid}`;

let svc: InProcessService;
let oa: openaiFake.OpenAIFake;

/** POST /v1/pairing/requests without a token, read event by event as a client sees it. */
function requestPairing(body: unknown): Promise<LiveStream> {
  return openLiveStream({ port: svc.port, method: 'POST', path: '/v1/pairing/requests', body });
}

function assertError(reply: Reply, status: number, code: string, param?: string | null): void {
  assert.equal(reply.status, status, reply.text);
  assert.equal(reply.json.error.code, code, reply.text);
  if (param !== undefined) assert.equal(reply.json.error.param, param, reply.text);
}

async function pending(): Promise<any[]> {
  const reply = await svc.request('GET', '/v1/pairing/requests');
  assert.equal(reply.status, 200, reply.text);
  return reply.json.data;
}

const secrets: string[] = [];

before(async () => {
  oa = await openaiFake.start({ apiKey: OPENAI_KEY });
  oa.setModels([{ id: 'gpt-test' }]);
  svc = await startInProcess({ home: tempHome(), env: { SWITCHYARD_PAIRING_TTL_MS: String(TTL_MS) } });
  assert.equal(
    (
      await svc.request('POST', '/v1/providers', {
        body: { kind: 'openai', baseUrl: oa.baseUrl, credential: OPENAI_KEY },
      })
    ).status,
    201,
  );
  assert.equal((await svc.request('POST', '/v1/providers/openai/actions/refresh-models')).status, 200);
});
after(async () => {
  await svc.stop();
  await oa.close();
});

describe('pairing', () => {
  test('a loopback request gets pending, then an approved token that works, narrowed by the approver', async () => {
    const stream = await requestPairing({ clientName: 'editor plugin', scopes: ['inference', 'read'] });
    assert.equal(stream.status, 200);
    assert.match(stream.contentType, /^text\/event-stream/);
    const first = await stream.next();
    assert.equal(first?.event, 'pairing.pending');
    assert.match(first!.data.userCode, /^[0-9A-Z]{4}-[0-9A-Z]{4}$/);
    assert.ok(Date.parse(first!.data.expiresAt) > Date.now());
    const listed = (await pending()).find((p) => p.id === first!.data.id);
    assert.deepEqual(
      [listed?.clientName, listed?.userCode, listed?.scopes],
      ['editor plugin', first!.data.userCode, ['inference', 'read']],
    );

    assertError(
      await svc.request('POST', `/v1/pairing/requests/${first!.data.id}/approve`, { body: { scopes: ['admin'] } }),
      400,
      'INVALID_REQUEST',
      'scopes',
    );
    const approved = await svc.request('POST', `/v1/pairing/requests/${first!.data.id}/approve`, {
      body: { scopes: ['read'] },
    });
    assert.equal(approved.status, 200, approved.text);
    assert.equal(approved.json.approved, true);
    assert.equal(approved.json.secret, undefined);
    const outcome = await stream.next();
    assert.equal(outcome?.event, 'pairing.approved');
    assert.equal(outcome!.data.token.id, approved.json.token.id);
    assert.deepEqual(outcome!.data.token.scopes, ['read']);
    assert.equal(outcome!.data.token.name, 'editor plugin');
    assert.equal(await stream.next(), null, 'the stream ends after the outcome');
    const secret: string = outcome!.data.secret;
    secrets.push(secret);
    assert.equal(approved.text.includes(secret), false);

    assert.equal((await svc.request('GET', '/v1/service-accounts', { token: secret })).status, 200);
    assertError(
      await svc.request('POST', '/v1/service-accounts', { token: secret, body: { name: 'x' } }),
      403,
      'FORBIDDEN',
    );
    // A second approval says what became of the first, by ID or by user code.
    const again = await svc.request('POST', `/v1/pairing/requests/${first!.data.id}/approve`, { body: {} });
    assertError(again, 409, 'CONFLICT');
    assert.equal(again.json.error.message, `Pairing request ${first!.data.userCode} was already approved.`);
    const byCode = await svc.request('POST', `/v1/pairing/requests/${first!.data.userCode.toLowerCase()}/deny`);
    assertError(byCode, 409, 'CONFLICT');
    assert.equal((await pending()).length, 0);
  });

  test('a denied request receives no token', async () => {
    const stream = await requestPairing({ clientName: 'cli' });
    const first = await stream.next();
    assert.deepEqual(
      (await pending()).map((p) => p.scopes),
      [['inference']],
    );
    const denied = await svc.request('POST', `/v1/pairing/requests/${first!.data.id}/deny`);
    assert.equal(denied.status, 200, denied.text);
    assert.deepEqual(await stream.next(), { id: null, event: 'pairing.denied', data: { id: first!.data.id } });
    assert.equal(await stream.next(), null);
    const again = await svc.request('POST', `/v1/pairing/requests/${first!.data.id}/deny`);
    assertError(again, 409, 'CONFLICT');
    assert.match(again.json.error.message, /was already denied\.$/);
    const tokens = (await svc.request('GET', '/v1/tokens')).json.data;
    assert.equal(
      tokens.some((t: { name: string }) => t.name === 'cli'),
      false,
    );
  });

  test('at most ten wait; the eleventh is 429; each waiting one expires', async () => {
    const streams = [];
    for (let i = 0; i < 10; i++) {
      const s = await requestPairing({ clientName: `agent ${i}` });
      assert.equal((await s.next())?.event, 'pairing.pending');
      streams.push(s);
    }
    const eleventh = await requestPairing({ clientName: 'one too many' });
    assert.equal(eleventh.status, 429);
    const body = JSON.parse(await eleventh.text());
    assert.equal(body.error.code, 'OVERLOADED');
    for (const s of streams) {
      const end = await s.next();
      assert.equal(end?.event, 'pairing.expired');
      assert.equal(await s.next(), null);
    }
    assert.equal((await pending()).length, 0);
  });

  test('bad input is a 4xx, and only an admin token may list, approve or deny', async () => {
    const bad = [
      {},
      { clientName: '' },
      { clientName: 'x'.repeat(101) },
      { clientName: 'a', scopes: [] },
      { clientName: 'a', scopes: ['root'] },
      { clientName: 'a', extra: 1 },
    ];
    for (const body of bad) {
      const s = await requestPairing(body);
      assert.equal(s.status, 400, JSON.stringify(body));
      // An unknown field is INVALID_JSON on every typed write (docs/api.md, Error codes).
      assert.equal(JSON.parse(await s.text()).error.code, 'extra' in body ? 'INVALID_JSON' : 'INVALID_REQUEST');
    }
    const weak = await svc.request('POST', '/v1/tokens', { body: { name: 'weak', scopes: ['read', 'manage'] } });
    svc.markSecretBearing(weak);
    assertError(await svc.request('GET', '/v1/pairing/requests', { token: weak.json.secret }), 403, 'FORBIDDEN');
    assertError(
      await svc.request('POST', '/v1/pairing/requests/pair_x/deny', { token: weak.json.secret }),
      403,
      'FORBIDDEN',
    );
    assertError(await svc.request('GET', '/v1/pairing/requests', { token: null }), 401, 'UNAUTHORIZED');
    assertError(
      await svc.request('POST', '/v1/pairing/requests/nope/approve', { body: { scopes: 'read' } }),
      400,
      'INVALID_REQUEST',
    );
    assertError(
      await svc.request('POST', `/v1/pairing/requests/${'z'.repeat(300)}/approve`, { body: {} }),
      404,
      'NOT_FOUND',
    );
    assertError(await svc.request('GET', '/v1/pairing/requests?x=1'), 400, 'INVALID_REQUEST');
  });
});

describe('service accounts', () => {
  test('create, read, update, and delete only once it owns no token', async () => {
    for (const body of [
      {},
      { name: '' },
      { name: 'x'.repeat(101) },
      { name: 'a', description: 5 },
      { name: 'a', description: 'd'.repeat(501) },
    ]) {
      assertError(await svc.request('POST', '/v1/service-accounts', { body }), 400, 'INVALID_REQUEST');
    }
    assertError(
      await svc.request('POST', '/v1/service-accounts', { body: { name: 'a', owner: 'me' } }),
      400,
      'INVALID_JSON',
      'owner',
    );
    const created = await svc.request('POST', '/v1/service-accounts', {
      body: { name: 'fleet', description: 'nightly agents' },
    });
    assert.equal(created.status, 201, created.text);
    const id: string = created.json.id;
    assert.match(id, /^sa_[0-9A-Z]{26}$/);
    assert.deepEqual(
      [created.json.name, created.json.description, created.json.tokenCount],
      ['fleet', 'nightly agents', 0],
    );

    const patched = await svc.request('PATCH', `/v1/service-accounts/${id}`, {
      body: { name: 'fleet-2', description: null },
    });
    assert.deepEqual([patched.status, patched.json.name, patched.json.description], [200, 'fleet-2', null]);
    assertError(
      await svc.request('PATCH', `/v1/service-accounts/${id}`, { body: { name: 7 } }),
      400,
      'INVALID_REQUEST',
    );
    assertError(await svc.request('GET', '/v1/service-accounts/sa_missing'), 404, 'NOT_FOUND');
    assertError(
      await svc.request('PATCH', '/v1/service-accounts/sa_missing', { body: { name: 'x' } }),
      404,
      'NOT_FOUND',
    );
    assertError(await svc.request('GET', '/v1/service-accounts?limit=1'), 400, 'INVALID_REQUEST');

    assertError(
      await svc.request('POST', '/v1/tokens', { body: { name: 'orphan', serviceAccountId: 'sa_missing' } }),
      400,
      'INVALID_REQUEST',
      'serviceAccountId',
    );
    const token = await svc.request('POST', '/v1/tokens', { body: { name: 'fleet token', serviceAccountId: id } });
    svc.markSecretBearing(token);
    assert.equal(token.json.token.serviceAccountId, id);
    assert.equal((await svc.request('GET', `/v1/service-accounts/${id}`)).json.tokenCount, 1);

    const refused = await svc.request('DELETE', `/v1/service-accounts/${id}`);
    assertError(refused, 409, 'CONFLICT');
    assert.equal(refused.json.error.details.tokenCount, 1);
    assert.equal((await svc.request('DELETE', `/v1/tokens/${token.json.token.id}`)).status, 200);
    assert.deepEqual((await svc.request('DELETE', `/v1/service-accounts/${id}`)).json, { id, deleted: true });
    assertError(await svc.request('GET', `/v1/service-accounts/${id}`), 404, 'NOT_FOUND');

    const audit = await svc.request('GET', '/v1/audit-events?resourceType=service-account');
    assert.deepEqual(
      audit.json.data.map((e: { action: string }) => e.action),
      ['service-account.delete', 'service-account.update', 'service-account.create'],
    );
  });

  test('usage groups by the service account that owns the calling token', async () => {
    const account = (await svc.request('POST', '/v1/service-accounts', { body: { name: 'metered' } })).json;
    const token = await svc.request('POST', '/v1/tokens', {
      body: { name: 'metered token', serviceAccountId: account.id },
    });
    svc.markSecretBearing(token);
    const body = { model: 'openai/gpt-test', messages: [{ role: 'user', content: 'hi' }] };
    for (let i = 0; i < 2; i++)
      assert.equal((await svc.request('POST', '/v1/chat/completions', { body, token: token.json.secret })).status, 200);
    assert.equal((await svc.request('POST', '/v1/chat/completions', { body })).status, 200);

    const byAccount = async () =>
      (await svc.request('GET', '/v1/usage/breakdown?groupBy=service_account')).json.data as {
        serviceAccountId: string | null;
        requests: number;
      }[];
    // The meter commits within a second of a call ending.
    const deadline = Date.now() + 10_000;
    let rows = await byAccount();
    while (rows.reduce((n, r) => n + r.requests, 0) < 3 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      rows = await byAccount();
    }
    const requestsOf = (id: string | null) => rows.find((r) => r.serviceAccountId === id)?.requests;
    assert.equal(requestsOf(account.id), 2);
    assert.equal(requestsOf(null), 1);
    const filtered = await svc.request('GET', `/v1/usage/summary?serviceAccountId=${account.id}`);
    assert.equal(filtered.json.totals.requests, 2);
    assertError(
      await svc.request('GET', `/v1/usage/summary?serviceAccountId=${'x'.repeat(300)}`),
      400,
      'INVALID_REQUEST',
      'serviceAccountId',
    );
  });
});

test('no pairing secret reaches the log, the audit trail, the store or any other response', async () => {
  assert.ok(secrets.length > 0);
  const audit = await svc.request('GET', '/v1/audit-events?limit=200');
  assert.ok(
    audit.json.data.some(
      (e: { action: string; metadata: { name?: string } }) =>
        e.action === 'token.create' && e.metadata.name === 'editor plugin',
    ),
  );
  const store = allBytes(svc.home);
  for (const secret of secrets) {
    assert.equal(svc.log().includes(secret), false, 'log');
    assert.equal(svc.stderr().includes(secret), false, 'stderr');
    assert.equal(svc.responsesText().includes(secret), false, 'responses');
    assert.equal(store.includes(secret), false, 'data directory');
  }
});
