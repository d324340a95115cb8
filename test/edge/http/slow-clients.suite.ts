import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { App, Prepared } from '../../../edge/http/app.ts';
import { createBodyBudget } from '../../../edge/http/body-budget.ts';
import { listen, type Listening } from '../../../edge/http/server.ts';
import { nodeHttpUws } from '../../../edge/http/server-node.ts';
import type { EdgeRequestHead } from '../../../edge/http/types.ts';
import type { ServiceError } from '../../../protocol/errors.ts';
import { testEdges } from '../../helpers/edges.ts';

// W3.5 item 8: slow clients are bounded. A request head must arrive whole within the head timeout (node:http;
// uWS's own is a fixed 10 s), and a body must keep a minimum average pace after a grace period (both edges).
// The bounds are shortened through the adapters' options, so that a trickling client is cut off in
// a fraction of a second.

const HEAD_MS = 250;
const PACE = { graceMs: 250, minBytesPerSecond: 2000 };
/** Well past each bound (and its check interval), well short of the 10 s defaults. */
const CUT_OFF_WITHIN_MS = 1500;

const ran: string[] = [];

function fakeApp(): Pick<App, 'prepare' | 'refuse'> {
  const prepare = (head: EdgeRequestHead): Prepared => ({
    requestId: 'req_test',
    bodyLimit: 1024 * 1024,
    streamBody: false,
    sharedBody: false,
    holdConnection: false,
    async run(body) {
      ran.push(head.path);
      return { status: 200, headers: { 'content-type': 'text/plain' }, body: `${head.path} ${body?.length ?? 0}` };
    },
    runStream: () => Promise.reject(new Error('not a streamed route')),
    fail: (err: ServiceError) => ({ status: err.status, headers: {}, body: err.code }),
    abort() {},
  });
  const refuse = (_head: EdgeRequestHead, err: ServiceError) => ({ status: err.status, headers: {}, body: err.code });
  return { prepare, refuse };
}

/**
 * Opens a connection, writes `first`, then one of `drip` every `everyMs` (a slow client) until the server
 * closes the connection or `drips` run out; resolves with what came back and how long the connection lasted.
 */
function trickle(
  port: number,
  first: string,
  drip: string,
  everyMs: number,
  drips = Infinity,
): Promise<{ text: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let sent = 0;
    const timer = setInterval(() => (sent++ < drips ? socket.write(drip) : clearInterval(timer)), everyMs);
    // A bound on the test, not a wait for the server: a connection still open by then is the failure.
    const bound = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the connection was still open after ${CUT_OFF_WITHIN_MS * 2} ms: ${JSON.stringify(text)}`));
    }, CUT_OFF_WITHIN_MS * 2);
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      clearTimeout(bound);
      resolve({ text, ms: performance.now() - started });
    });
    socket.write(first);
  });
}

for (const edge of testEdges())
  describe(`slow clients (${edge.name})`, () => {
    let server: Listening;
    const budget = createBodyBudget(() => 1024 * 1024);
    before(async () => {
      const uws = edge.name === 'node:http' ? nodeHttpUws({ headTimeoutMs: HEAD_MS }) : edge.uws;
      server = await listen(uws, fakeApp(), '127.0.0.1', 0, { bodyBudget: budget, bodyPace: PACE });
    });
    after(() => server.stopListening());

    it('a body trickled a byte at a time is cut off once it falls behind the pace, and runs nothing', async () => {
      const { text, ms } = await trickle(
        server.port,
        'POST /trickled HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\nx',
        'x',
        30,
      );
      assert.ok(ms >= PACE.graceMs * 0.9 && ms < CUT_OFF_WITHIN_MS, `${ms} ms`);
      assert.equal(text, '');
      await server.idle();
      assert.deepEqual(
        ran.filter((p) => p === '/trickled'),
        [],
      );
      assert.equal(budget.held(), 0);
    });

    it('a body that keeps the pace past the grace period is read whole and answered', async () => {
      const piece = 'y'.repeat(500);
      const { text } = await trickle(
        server.port,
        `POST /paced HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ${piece.length * 9}\r\n\r\n${piece}`,
        piece,
        50,
        8,
      );
      assert.match(text, /^HTTP\/1\.1 200 [\s\S]*\/paced 4500$/);
    });

    it('a request head trickled a line at a time is cut off at the head timeout (node:http; uWS: its fixed 10 s)', {
      skip: edge.name !== 'node:http' && 'the uWS build times heads out after 10 s, not shortened in tests',
    }, async () => {
      const { text, ms } = await trickle(server.port, 'GET /slow-head HTTP/1.1\r\nHost: x\r\n', 'X-Slow: 1\r\n', 30);
      assert.ok(ms >= HEAD_MS * 0.9 && ms < CUT_OFF_WITHIN_MS, `${ms} ms`);
      assert.ok(text === '' || text.startsWith('HTTP/1.1 408 '), text);
      assert.deepEqual(
        ran.filter((p) => p === '/slow-head'),
        [],
      );
    });
  });
