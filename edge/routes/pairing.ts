import { ServiceError } from '../../protocol/errors.ts';
import { checkPairingApprove, checkPairingCreate } from '../../protocol/http/service-accounts.ts';
import { readQuery } from '../../protocol/query.ts';
import { actorOf } from '../../protocol/actor.ts';
import type { PairingPort } from '../../protocol/ports/service-accounts.ts';
import { streamEvents } from '../http/event-stream.ts';
import { isLoopbackAddress } from '../http/host-check.ts';
import { route, type RouteDef } from '../http/router.ts';

// Pairing (docs/api.md "Pairing"): the one tokenless /v1 route, for loopback peers only. The peer address
// comes from the socket; a request with none (an in-process call) is not known to be local and is refused.
// The check runs from `rawBody`, which the edge calls with the request head, so that a refused peer's body is
// never read: nothing else stands between a tokenless peer and the JSON body limit.

function assertLoopback(peer: string | undefined): void {
  if (peer === undefined || !isLoopbackAddress(peer)) {
    throw new ServiceError('FORBIDDEN', 'Pairing requests are accepted from this machine (a loopback address) only.');
  }
}

export function pairingRoutes(pairing: PairingPort, keepAliveMs?: number): RouteDef[] {
  return [
    route({
      method: 'POST',
      path: '/v1/pairing/requests',
      scope: 'public',
      body: checkPairingCreate,
      rawBody: (head) => (assertLoopback(head.peer), 'buffer'),
      handle: async ({ req, body }) => {
        assertLoopback(req.peer);
        readQuery(req.query, []);
        const { stream } = await pairing.request(body);
        return { stream: (out) => streamEvents(out, stream, keepAliveMs) };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/pairing/requests',
      scope: 'admin',
      handle: async ({ req }) => {
        readQuery(req.query, []);
        return { body: { data: await pairing.list() } };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/pairing/requests/:id/approve',
      scope: 'admin',
      body: checkPairingApprove,
      handle: async ({ req, params, body, principal, requestId }) => {
        readQuery(req.query, []);
        return { body: await pairing.approve(params.id!, body.scopes, actorOf(principal), requestId) };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/pairing/requests/:id/deny',
      scope: 'admin',
      handle: async ({ req, params }) => {
        readQuery(req.query, []);
        return { body: await pairing.deny(params.id!) };
      },
    }),
  ];
}
