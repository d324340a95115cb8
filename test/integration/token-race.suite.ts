import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ServiceParts } from '../../service/compose.ts';
import { startInProcess } from '../helpers/in-process.ts';
import { answered, assertNotFound, race } from '../helpers/races.ts';

// W4.6 item 1, from outside: a DELETE of a token, then at once a PATCH of it, both answered 200, and the token's
// secret still passed on the gateway, also after a restart. Two HTTP requests on two connections reach the
// control plane in either order, so the test calls the token service itself, revocation first; what it checks
// is what a client sees: the list, the gateway on every edge thread, the same after a restart.

const actor = { actorType: 'system', actorId: 'test' } as const;
const CHAT = { model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] };

test('a change racing a revocation leaves the secret refused on the gateway, also after a restart', async () => {
  let parts: Readonly<Partial<ServiceParts>> | undefined;
  const svc = await startInProcess({ beforeFamily: (_name, p) => void (parts = p) });
  let secret = '';
  let id = '';
  const refused = async (s: typeof svc) => {
    assert.equal((await s.request('POST', '/v1/chat/completions', { token: secret, body: CHAT })).status, 401);
    const listed = await s.request('GET', '/v1/tokens');
    assert.ok(!listed.json.data.some((t: { id: string }) => t.id === id), 'the revoked token is listed');
  };
  try {
    const made = await svc.request('POST', '/v1/tokens', { body: { name: 'agent', scopes: ['inference'] } });
    svc.markSecretBearing(made);
    ({ secret } = made.json);
    ({ id } = made.json.token);
    // Authenticated: the model is what is wrong.
    assert.equal((await svc.request('POST', '/v1/chat/completions', { token: secret, body: CHAT })).status, 404);
    const tokens = parts!.tokens!;
    const [revoked, changed] = await race(
      () => tokens.revoke(id, actor, 'req_test_1'),
      () => tokens.update(id, { name: 'x' }, actor, 'req_test_2'),
    );
    answered(revoked);
    assertNotFound(changed, /^No token with ID `tok_/);
    await refused(svc);
    assert.equal((await svc.request('PATCH', `/v1/tokens/${id}`, { body: { name: 'y' } })).status, 404);
  } finally {
    await svc.stop();
  }
  const again = await startInProcess({ home: svc.home });
  try {
    await refused(again);
  } finally {
    await again.stop();
  }
});
