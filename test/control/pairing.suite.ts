import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ServiceError } from '../../protocol/errors.ts';
import type { TokenView } from '../../protocol/http/tokens.ts';
import { createPairing } from '../../control/pairing.ts';
import type { Subscriber } from '../../control/events.ts';
import type { TokenService } from '../../control/token-service.ts';
import { pairingRoutes } from '../../edge/routes/pairing.ts';
import type { RouteContext } from '../../edge/http/router.ts';

// The pairing state machine without a service: a fake token service records what is minted and revoked.

const ACTOR = { actorType: 'token' as const, actorId: 'tok_admin' };

function fakeTokens(onCreate: () => void = () => undefined) {
  const created: TokenView[] = [];
  const revoked: string[] = [];
  const tokens = {
    async create(input: { name: string; scopes?: string[] }) {
      onCreate();
      const token = {
        id: `tok_${created.length}`,
        name: input.name,
        scopes: input.scopes,
        prefix: 'sk-svc-abcd',
        serviceAccountId: null,
        createdAt: '',
        lastUsedAt: null,
        expiresAt: null,
      } as TokenView;
      created.push(token);
      return { token, secret: `sk-svc-secret-${created.length}` };
    },
    async revoke(id: string) {
      revoked.push(id);
      return created.find((t) => t.id === id)!;
    },
  } as unknown as TokenService;
  return { tokens, created, revoked };
}

const events = (sub: Subscriber) => sub.take().map((frame) => frame.split('\n')[0]);

function rejectsWith(promise: Promise<unknown> | (() => unknown), code: string) {
  const run = typeof promise === 'function' ? Promise.resolve().then(promise) : promise;
  return assert.rejects(run, (err: unknown) => err instanceof ServiceError && err.code === code);
}

describe('pairing', () => {
  test('a requester leaving withdraws its request', () => {
    const pairing = createPairing(fakeTokens());
    const { view, stream } = pairing.request({ clientName: 'app' });
    assert.deepEqual(events(stream), ['event: pairing.pending']);
    stream.close();
    assert.deepEqual(pairing.list(), []);
    assert.throws(
      () => pairing.deny(view.id),
      (err: unknown) => err instanceof ServiceError && err.code === 'NOT_FOUND',
    );
  });

  test('a request is found by its user code too; a second decision says what the first was', async () => {
    const pairing = createPairing(fakeTokens());
    const { view, stream } = pairing.request({ clientName: 'app' });
    const answer = await pairing.approve(view.userCode.toLowerCase(), undefined, ACTOR, 'req_0');
    assert.equal(answer.id, view.id);
    assert.deepEqual(events(stream), ['event: pairing.pending', 'event: pairing.approved']);
    const twice: (() => unknown)[] = [
      () => pairing.approve(view.id, undefined, ACTOR, 'req_0'),
      () => pairing.deny(view.userCode),
    ];
    for (const again of twice)
      await assert.rejects(
        Promise.resolve().then(again),
        (err: unknown) =>
          err instanceof ServiceError &&
          err.code === 'CONFLICT' &&
          err.message === `Pairing request ${view.userCode} was already approved.`,
      );
    await rejectsWith(() => pairing.deny('pair_unknown'), 'NOT_FOUND');
  });

  test('a requester that leaves while its token is written gets no live token', async () => {
    let stream!: Subscriber;
    const fake = fakeTokens(() => stream.close());
    const pairing = createPairing(fake);
    const request = pairing.request({ clientName: 'app', scopes: ['inference'] });
    stream = request.stream;
    await rejectsWith(pairing.approve(request.view.id, undefined, ACTOR, 'req_1'), 'CONFLICT');
    assert.deepEqual(fake.revoked, [fake.created[0]!.id]);
  });

  test('the limit counts waiting requests only, and shutdown expires them', async () => {
    const pairing = createPairing({ ...fakeTokens(), maxPending: 2 });
    const a = pairing.request({ clientName: 'a' });
    const b = pairing.request({ clientName: 'b' });
    assert.throws(
      () => pairing.request({ clientName: 'c' }),
      (err: unknown) =>
        err instanceof ServiceError &&
        err.code === 'OVERLOADED' &&
        err.status === 429 &&
        err.headers['retry-after'] === '5',
    );
    await pairing.approve(a.view.id, undefined, ACTOR, 'req_2');
    assert.deepEqual(events(a.stream), ['event: pairing.pending', 'event: pairing.approved']);
    assert.equal(a.stream.ended(), 'done');
    const c = pairing.request({ clientName: 'c' });
    pairing.close();
    for (const s of [b.stream, c.stream]) {
      assert.deepEqual(events(s), ['event: pairing.pending', 'event: pairing.expired']);
      assert.equal(s.ended(), 'done');
    }
    assert.throws(
      () => pairing.request({ clientName: 'd' }),
      (err: unknown) => err instanceof ServiceError && err.code === 'OVERLOADED',
    );
  });

  test('the request route refuses a peer that is not loopback, or that it cannot see', async () => {
    const pairing = createPairing(fakeTokens());
    const create = pairingRoutes(pairing).find((r) => r.method === 'POST' && r.path === '/v1/pairing/requests')!;
    const ctx = (peer: string | undefined) =>
      ({
        req: { method: 'POST', path: create.path, query: '', headers: {}, body: null, peer },
        body: { clientName: 'x' },
        params: {},
        principal: null,
        requestId: 'r',
        bodyStream: null,
        onAbort: () => undefined,
      }) as unknown as RouteContext<unknown>;
    for (const peer of ['10.0.0.1', '192.168.1.20', '::ffff:10.0.0.1', '', undefined]) {
      // Refused from the head, before the edge reads a body, and again by the handler.
      assert.throws(
        () => create.rawBody!({ method: 'POST', path: create.path, query: '', headers: {}, peer }),
        (err: unknown) => err instanceof ServiceError && err.code === 'FORBIDDEN',
      );
      await rejectsWith(() => create.handle(ctx(peer)), 'FORBIDDEN');
    }
    assert.deepEqual(pairing.list(), []);
    for (const peer of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) {
      assert.equal(create.rawBody!({ method: 'POST', path: create.path, query: '', headers: {}, peer }), 'buffer');
      const result = await create.handle(ctx(peer));
      assert.equal(typeof result.stream, 'function', String(peer));
    }
    assert.equal(pairing.list().length, 3);
    pairing.close();
  });
});
