import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { App, Prepared } from '../../../edge/http/app.ts';
import { listen, type Listening } from '../../../edge/http/server.ts';
import type { EdgeRequestHead } from '../../../edge/http/types.ts';
import type { ServiceError } from '../../../protocol/errors.ts';
import { testEdges } from '../../helpers/edges.ts';

// The adapter's buffered body, on each edge (native uWS where it loads, and node:http), over a real socket: the bytes a
// route gets, and whether the buffer owns
// its ArrayBuffer whole (what lets a route transfer it to a worker without copying).

const LIMIT = 4 * 1024 * 1024;

interface Seen {
  length: number;
  equal: boolean;
  ownsBuffer: boolean;
}

let expected: Buffer = Buffer.alloc(0);

function fakeApp(): Pick<App, 'prepare' | 'refuse'> {
  const prepare = (head: EdgeRequestHead): Prepared => ({
    requestId: 'req_test',
    bodyLimit: LIMIT,
    streamBody: false,
    sharedBody: false,
    holdConnection: false,
    async run(body) {
      // A header value node:http cannot write (past U+00FF), as a route relaying an odd upstream header might.
      if (head.path === '/odd-header')
        return {
          status: 200,
          headers: { 'content-type': 'text/plain', 'x-odd': 'a\u2028b' } as Record<string, string>,
          body: 'answered',
        };
      const seen: Seen = {
        length: body?.length ?? -1,
        equal: body !== null && body.equals(expected),
        ownsBuffer: body !== null && body.byteOffset === 0 && body.byteLength === body.buffer.byteLength,
      };
      return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(seen) };
    },
    runStream: () => Promise.reject(new Error('not a streamed route')),
    fail: (err: ServiceError) => ({ status: err.status, headers: {}, body: err.code }),
    abort() {},
  });
  const refuse = (_head: EdgeRequestHead, err: ServiceError) => ({
    status: err.status,
    headers: { 'content-type': 'text/plain' },
    body: err.code,
  });
  return { prepare, refuse };
}

/** Sends `chunks` as one body: with a Content-Length when `declared`, else chunked. */
function post(port: number, chunks: Buffer[], declared: boolean): Promise<{ status: number; seen: Seen | string }> {
  return new Promise((resolve, reject) => {
    const total = chunks.reduce((n, c) => n + c.length, 0);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/x',
        agent: false,
        headers: declared ? { 'content-length': String(total) } : {},
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () =>
          resolve({ status: res.statusCode!, seen: res.statusCode === 200 ? (JSON.parse(text) as Seen) : text }),
        );
      },
    );
    req.on('error', reject);
    const next = (i: number) => {
      if (i === chunks.length) return req.end();
      req.write(chunks[i], () => setImmediate(() => next(i + 1)));
    };
    next(0);
  });
}

function body(size: number): Buffer {
  const bytes = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + 7) & 0xff;
  return bytes;
}

for (const edge of testEdges())
  describe(`edge/server buffered bodies (${edge.name})`, () => {
    let server: Listening;
    before(async () => {
      server = await listen(edge.uws, fakeApp(), '127.0.0.1', 0);
    });
    after(() => server.stopListening());

    for (const size of [1, 200, 5000, 300 * 1024, 3 * 1024 * 1024]) {
      it(
        `a ${size}-byte body with a Content-Length arrives ` +
          `whole${size > 64 * 1024 ? ', in a buffer of its own' : ''}`,
        async () => {
          expected = body(size);
          const pieces = [];
          for (let at = 0; at < size; at += 64 * 1024) pieces.push(expected.subarray(at, at + 64 * 1024));
          const { status, seen } = await post(server.port, pieces, true);
          assert.equal(status, 200);
          // A large body owns its ArrayBuffer, so a route can transfer it; a small one travels as text instead.
          assert.ok(typeof seen === 'object');
          assert.deepEqual(
            { ...seen, ownsBuffer: size > 64 * 1024 ? seen.ownsBuffer : true },
            { length: size, equal: true, ownsBuffer: true },
          );
        },
      );
    }

    it('a chunked body arrives whole', async () => {
      expected = body(200 * 1024);
      const pieces = [expected.subarray(0, 10), expected.subarray(10, 70_000), expected.subarray(70_000)];
      const { status, seen } = await post(server.port, pieces, false);
      assert.equal(status, 200);
      assert.equal(typeof seen, 'object');
      assert.equal((seen as Seen).length, expected.length);
      assert.equal((seen as Seen).equal, true);
    });

    it('a second listener on the same port fails instead of sharing it', async () => {
      await assert.rejects(listen(edge.uws, fakeApp(), '127.0.0.1', server.port), /cannot listen on 127\.0\.0\.1:\d+/);
    });

    it('an answer with a header value node:http cannot write still reaches the client', async () => {
      const reply = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port: server.port,
            method: 'POST',
            path: '/odd-header',
            agent: false,
            headers: { 'content-length': '0' },
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8').on('data', (d: string) => (text += d));
            res.on('end', () => resolve({ status: res.statusCode!, text }));
          },
        );
        req.on('error', reject);
        req.end();
      });
      assert.deepEqual(reply, { status: 200, text: 'answered' });
    });

    it('a declared body over the limit is refused', async () => {
      expected = body(LIMIT + 1);
      const { status, seen } = await post(server.port, [expected], true);
      assert.equal(status, 413);
      assert.equal(seen, 'PAYLOAD_TOO_LARGE');
    });
  });
