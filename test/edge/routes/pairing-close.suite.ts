import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createPairing, type Pairing } from '../../../control/pairing.ts';
import type { TokenService } from '../../../control/token-service.ts';
import { createApp } from '../../../edge/http/app.ts';
import { corsPolicy } from '../../../edge/http/cors.ts';
import { listen, type Listening } from '../../../edge/http/server.ts';
import { pairingRoutes } from '../../../edge/routes/pairing.ts';
import { testEdges } from '../../helpers/edges.ts';

// W3.5 item 2: a requester that closes its pairing stream withdraws the request at once, on each edge. The
// request is a management write, so its connection is held while it runs; the edge must still see the close.

const ADMIN = 'sk-svc-' + 'A'.repeat(43);

function fakeTokens(created: string[]): TokenService {
  return {
    async create(input: { name: string }) {
      created.push(input.name);
      return { token: { id: `tok_${created.length}`, name: input.name }, secret: 'sk-svc-secret' };
    },
    async revoke() {
      return {};
    },
  } as unknown as TokenService;
}

/** The pairing service, telling the test when a requester's stream closes (the withdrawal). */
function observed(pairing: Pairing, onClosed: (id: string) => void): Pairing {
  return {
    ...pairing,
    request(input) {
      const made = pairing.request(input);
      const close = made.stream.close.bind(made.stream);
      made.stream.close = () => {
        close();
        onClosed(made.view.id);
      };
      return made;
    },
  };
}

for (const edge of testEdges())
  describe(`pairing stream closed by its requester (${edge.name})`, () => {
    const created: string[] = [];
    const closed = new Map<string, () => void>();
    const pairing = createPairing({ tokens: fakeTokens(created) });
    let server: Listening;
    let app: ReturnType<typeof createApp>;
    before(async () => {
      app = createApp({
        routes: pairingRoutes(
          observed(pairing, (id) => closed.get(id)?.()),
          60_000,
        ),
        log: pino({ level: 'silent' }, new Writable({ write: (_c, _e, done) => done() })),
        authenticate: (secret) =>
          secret === ADMIN
            ? { ok: true, principal: { tokenId: 'tok_admin', scopes: ['admin'], serviceAccountId: null } }
            : { ok: false, reason: 'unknown' },
        cors: () => corsPolicy([]),
        multipartBodyLimit: () => 1024 * 1024,
        jsonBodyLimit: () => 64 * 1024,
        listener: { host: '127.0.0.1', networkExposed: false },
        isDraining: () => false,
      });
      server = await listen(edge.uws, app, '127.0.0.1', 0);
    });
    after(() => {
      pairing.close();
      server.stopListening();
    });

    const admin = (path: string) =>
      app.handle({
        method: 'POST',
        path,
        query: '',
        headers: { host: '127.0.0.1', authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: Buffer.from('{}'),
      });

    it('withdraws the request at once: approve and deny then answer 404, and no token is made', async () => {
      const socket = connect(server.port, '127.0.0.1');
      const body = JSON.stringify({ clientName: 'leaving app', scopes: ['admin'] });
      socket.write(
        `POST /v1/pairing/requests HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ` +
          `${body.length}\r\n\r\n${body}`,
      );
      const id = await new Promise<string>((resolve) => {
        let text = '';
        socket.on('data', (d) => {
          text += d.toString('latin1');
          const match = /"id":"(pair_\w+)"/.exec(text);
          if (match) resolve(match[1]!);
        });
      });
      assert.deepEqual(
        pairing.list().map((p) => p.id),
        [id],
      );
      const withdrawn = new Promise<void>((resolve) => closed.set(id, resolve));
      socket.destroy();
      let bound: NodeJS.Timeout | undefined;
      const late = new Promise<never>(
        (_, reject) =>
          (bound = setTimeout(() => reject(new Error('the closed stream still holds its request after 2 s')), 2000)),
      );
      await Promise.race([withdrawn, late]).finally(() => clearTimeout(bound));
      assert.deepEqual(pairing.list(), []);
      assert.equal((await admin(`/v1/pairing/requests/${id}/approve`)).status, 404);
      assert.equal((await admin(`/v1/pairing/requests/${id}/deny`)).status, 404);
      assert.deepEqual(created, []);
      await server.idle();
    });
  });
