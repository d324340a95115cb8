import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { App, Prepared } from '../../../edge/http/app.ts';
import { createBodyBudget } from '../../../edge/http/body-budget.ts';
import { listen, type Listening } from '../../../edge/http/server.ts';
import type { EdgeRequestHead, EdgeResponse } from '../../../edge/http/types.ts';
import type { ServiceError } from '../../../protocol/errors.ts';
import { testEdges } from '../../helpers/edges.ts';

// The uWS adapter's connection handling over real sockets (W2.6): pipelined requests behind a write, early
// answers to uploads, the in-flight body budget, requests abandoned mid-body, and Content-Length framing.

const LIMIT = 8 * 1024 * 1024;
const BUDGET = 4 * 1024 * 1024;

/** What the fake routes did, per path. */
const ran = new Map<string, number>();
/** A run of `/hold/...` waits here until the test lets it go. */
const holds = new Map<string, () => void>();
const started = new Map<string, () => void>();

function whenStarted(path: string): Promise<void> {
  return new Promise((resolve) => started.set(path, resolve));
}

const answer = (status: number, text: string): EdgeResponse => ({
  status,
  headers: { 'content-type': 'text/plain' },
  body: text,
});

function fakeApp(): Pick<App, 'prepare' | 'refuse'> {
  const prepare = (head: EdgeRequestHead): Prepared => {
    const write = head.method !== 'GET';
    const early = head.path.startsWith('/early');
    return {
      requestId: 'req_test',
      bodyLimit: write ? LIMIT : null,
      streamBody: early,
      sharedBody: false,
      holdConnection: write && !head.path.startsWith('/gateway'),
      async run(body) {
        ran.set(head.path, (ran.get(head.path) ?? 0) + 1);
        started.get(head.path)?.();
        if (head.path.startsWith('/hold')) await new Promise<void>((resolve) => holds.set(head.path, resolve));
        return answer(200, `${head.method} ${head.path} ${body?.length ?? 0}`);
      },
      // An upload route that answers before reading its body, as a multipart route refusing a preset does.
      runStream: async () => answer(400, 'refused before the upload was read'),
      fail: (err: ServiceError) => ({
        status: err.status,
        headers: { 'content-type': 'text/plain', ...err.headers },
        body: err.code,
      }),
      abort() {},
    };
  };
  const refuse = (_head: EdgeRequestHead, err: ServiceError) => ({
    status: err.status,
    headers: { 'content-type': 'text/plain' },
    body: err.code,
  });
  return { prepare, refuse };
}

/** Writes `bytes` on a new connection and collects everything until the server closes it (or `until` matches). */
function exchange(port: number, bytes: string | Buffer, until?: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (d) => {
      text += d.toString('latin1');
      if (until?.test(text)) socket.end();
    });
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
    socket.write(bytes);
  });
}

const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));

/** One turn of the event loop with a poll phase in it: bytes already written have reached the server's socket. */
const pollTurn = () => new Promise<void>((r) => setImmediate(() => setImmediate(() => setImmediate(r))));

for (const edge of testEdges())
  describe(`edge/server connections (${edge.name})`, () => {
    let server: Listening;
    const budget = createBodyBudget(() => BUDGET);
    before(async () => {
      ran.clear();
      server = await listen(edge.uws, fakeApp(), '127.0.0.1', 0, { bodyBudget: budget });
    });
    after(() => server.stopListening());

    it(
      'a write followed in the same packet by a pipelined request is refused before it acts (uWS) or answered before ' +
        'it (node:http)',
      async () => {
        const body = '{"name":"x"}';
        const text = await exchange(
          server.port,
          `POST /same-packet HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}GET /health ` +
            `HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
        );
        if (edge.name === 'uWebSockets.js') {
          // uWS ends such a connection; what matters is that the write never ran, so nothing was committed unanswered.
          assert.deepEqual(statuses(text), []);
          assert.equal(ran.get('/same-packet'), undefined);
        } else {
          // node:http serves the pipelined request once the write is answered: nothing is committed unanswered.
          assert.deepEqual(statuses(text), [200, 200]);
          assert.ok(text.indexOf('POST /same-packet 12') < text.indexOf('GET /health 0'), text);
          assert.equal(ran.get('/same-packet'), 1);
        }
        await server.idle();
      },
    );

    it('requests pipelined behind reads in the same packet are all answered, in order', async () => {
      const text = await exchange(
        server.port,
        'GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\nGET /third HTTP/1.1\r\nHost: ' +
          'x\r\nConnection: close\r\n\r\n',
      );
      assert.deepEqual(statuses(text), [200, 200, 200], text);
      assert.ok(
        text.indexOf('GET /first') < text.indexOf('GET /second') &&
          text.indexOf('GET /second') < text.indexOf('GET /third'),
        text,
      );
      await server.idle();
    });

    it('nothing pipelined behind a request that closes the connection runs', async () => {
      const text = await exchange(
        server.port,
        'GET /closing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nPOST /behind-close HTTP/1.1\r\nHost: ' +
          'x\r\nContent-Length: 2\r\n\r\n{}',
        // uWS keeps the connection until its 10 s idle timeout: done once it has answered what it serves.
        edge.name === 'uWebSockets.js' ? /POST \/behind-close 2/ : undefined,
      );
      assert.match(text, /GET \/closing 0/);
      await server.idle();
      // uWS dispatches it anyway (and answers it); node:http serves nothing after a closing answer.
      if (edge.name === 'node:http') assert.equal(ran.get('/behind-close'), undefined);
    });

    it('nothing pipelined behind an early answer that closes the connection runs', async () => {
      const body = 'z'.repeat(1000);
      const text = await exchange(
        server.port,
        `POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}POST /behind-early ` +
          `HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}`,
        edge.name === 'uWebSockets.js' ? /POST \/behind-early 2/ : undefined,
      );
      assert.match(text, /refused before the upload was read/);
      await server.idle();
      // uWS parses on and serves it (its answer still reaches the client); node:http serves nothing more.
      if (edge.name === 'uWebSockets.js')
        assert.equal(ran.get('/behind-early') === 1, text.endsWith('POST /behind-early 2'));
      else assert.equal(ran.get('/behind-early'), undefined);
    });

    it(
      'a hundred requests pipelined in one packet behind a read still running are answered in order (node:http) or ' +
        'end the connection (uWS)',
      async () => {
        const socket: Socket = connect(server.port, '127.0.0.1');
        let text = '';
        socket.on('data', (d) => (text += d.toString('latin1')));
        const closed = new Promise<void>((r) => socket.on('close', () => r()));
        const running = whenStarted('/hold/read');
        let burst = 'GET /hold/read HTTP/1.1\r\nHost: x\r\n\r\n';
        for (let i = 0; i < 100; i++)
          burst += `GET /p${i} HTTP/1.1\r\nHost: x\r\n${i === 99 ? 'Connection: close\r\n' : ''}\r\n`;
        await new Promise<void>((r) => socket.write(burst, () => r()));
        await running;
        // The read is still running once the whole burst has been parsed.
        await pollTurn();
        holds.get('/hold/read')?.();
        await closed;
        if (edge.name === 'uWebSockets.js') {
          assert.deepEqual(statuses(text), []);
          return;
        }
        assert.equal(statuses(text).length, 101, text.slice(-400));
        const order = [...text.matchAll(/GET (\/\S+) 0/g)].map((m) => m[1]);
        assert.deepEqual(order, ['/hold/read', ...Array.from({ length: 100 }, (_, i) => `/p${i}`)]);
      },
    );

    it(
      'a request pipelined behind a management write that is still running is answered after it, in ' + 'order',
      async () => {
        const socket: Socket = connect(server.port, '127.0.0.1');
        let text = '';
        socket.on('data', (d) => (text += d.toString('latin1')));
        const closed = new Promise<void>((r) => socket.on('close', () => r()));
        const running = whenStarted('/hold/settings');
        socket.write('PATCH /hold/settings HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}');
        await running;
        await new Promise<void>((r) => socket.write('GET /after HTTP/1.1\r\nHost: x\r\n\r\n', () => r()));
        await pollTurn();
        holds.get('/hold/settings')!();
        await new Promise<void>((r) => {
          const check = () => (statuses(text).length === 2 ? r() : socket.once('data', check));
          check();
        });
        socket.end();
        await closed;
        assert.deepEqual(statuses(text), [200, 200]);
        assert.ok(text.indexOf('PATCH /hold/settings 2') < text.indexOf('GET /after 0'), text);
      },
    );

    it('an answer sent before an upload was read whole reaches the client, which was still writing', async () => {
      const upload = Buffer.alloc(1024 * 1024, 0x61);
      for (let i = 0; i < 8; i++) {
        const reply = await new Promise<{ status: number; text: string }>((resolve, reject) => {
          const req = request(
            {
              host: '127.0.0.1',
              port: server.port,
              method: 'POST',
              path: '/early',
              agent: false,
              headers: { 'content-length': String(upload.length) },
            },
            (res) => {
              let text = '';
              res.setEncoding('utf8').on('data', (d: string) => (text += d));
              res.on('end', () => resolve({ status: res.statusCode!, text }));
            },
          );
          req.on('error', reject);
          req.end(upload);
        });
        assert.deepEqual(reply, { status: 400, text: 'refused before the upload was read' });
      }
      await server.idle();
    });

    it(
      'bodies beyond the in-flight budget are refused with 503 and retry-after until the held ones are ' + 'done',
      async () => {
        const big = 3 * 1024 * 1024;
        const first = new Promise<string>((resolve, reject) => {
          const running = whenStarted('/hold/big');
          const socket = connect(server.port, '127.0.0.1');
          let text = '';
          socket.on('data', (d) => (text += d.toString('latin1')));
          socket.on('close', () => resolve(text));
          socket.on('error', reject);
          socket.write(`POST /hold/big HTTP/1.1\r\nHost: x\r\nContent-Length: ${big}\r\nConnection: close\r\n\r\n`);
          socket.write(Buffer.alloc(big, 0x20));
          void running.then(async () => {
            // The first body is held by its route: a second that does not fit the budget is refused unread.
            const second = await exchange(
              server.port,
              `POST /gateway/x HTTP/1.1\r\nHost: x\r\nContent-Length: ${big}\r\n\r\n${' '.repeat(big)}`,
              /OVERLOADED/,
            );
            assert.deepEqual(statuses(second), [503]);
            assert.match(second, /retry-after: 1\r\n/i);
            assert.match(second, /connection: close\r\n/i);
            assert.equal(ran.get('/gateway/x'), undefined);
            holds.get('/hold/big')!();
          });
        });
        assert.deepEqual(statuses(await first), [200]);
        await server.idle();
        assert.equal(budget.held(), 0);
        // With the first done, the same body fits again.
        const third = await exchange(
          server.port,
          `POST /gateway/y HTTP/1.1\r\nHost: x\r\nContent-Length: ${big}\r\nConnection: ` +
            `close\r\n\r\n${' '.repeat(big)}`,
        );
        assert.deepEqual(statuses(third), [200]);
        assert.equal(budget.held(), 0);
      },
    );

    it('a request whose client leaves mid-body is no longer in flight, and gives its budget back', async () => {
      const socket = connect(server.port, '127.0.0.1');
      await new Promise<void>((r) => socket.on('connect', () => r()));
      await new Promise<void>((r) =>
        socket.write(
          `POST /gateway/partial HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n${'x'.repeat(1000)}`,
          () => r(),
        ),
      );
      await pollTurn();
      assert.equal(server.inflight(), 1);
      socket.destroy();
      // Resolves only once the abandoned request stops counting (shutdown's drain waits on this).
      await server.idle();
      assert.equal(server.inflight(), 0);
      assert.equal(budget.held(), 0);
      assert.equal(ran.get('/gateway/partial'), undefined);
    });

    it(
      'the bytes after a refused framing are never parsed: a request smuggled behind conflicting Content-Length does ' +
        'not run',
      async () => {
        const smuggled = 'POST /smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}';
        for (const framing of [
          'Content-Length: 2\r\nContent-Length: 40',
          'Content-Length: 2, 40',
          'Content-Length: 2\r\nTransfer-Encoding: chunked',
        ]) {
          // Framed by the first length, the smuggled write follows the 2-byte body in the same packet. uWS closes
          // such a connection unanswered, node:http answers 400 and closes; neither runs a route.
          const text = await exchange(
            server.port,
            `POST /gateway/smuggle HTTP/1.1\r\nHost: x\r\n${framing}\r\n\r\n{}${smuggled}`,
          );
          assert.ok(
            statuses(text).length === 0 || (statuses(text).join() === '400' && text.startsWith('HTTP/1.1 400')),
            `${framing}: ${text}`,
          );
          assert.equal(ran.get('/gateway/smuggle'), undefined, framing);
          assert.equal(ran.get('/smuggled'), undefined, framing);
        }
        await server.idle();
      },
    );

    it(
      'conflicting Content-Length values are a 400 and a closed connection; identical repeats are one length (uWS) ' +
        'or a 400 (node:http)',
      async () => {
        const conflicting = await exchange(
          server.port,
          'POST /gateway/cl HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}x',
        );
        assert.deepEqual(statuses(conflicting), [400]);
        assert.equal(ran.get('/gateway/cl'), undefined);
        const repeated = await exchange(
          server.port,
          'POST /gateway/cl2 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\nConnection: ' +
            'close\r\n\r\n{}',
        );
        if (edge.name === 'uWebSockets.js') {
          assert.deepEqual(statuses(repeated), [200]);
          assert.match(repeated, /POST \/gateway\/cl2 2/);
        } else {
          // node:http's parser refuses any repeated Content-Length before a route could see it.
          assert.deepEqual(statuses(repeated), [400]);
          assert.equal(ran.get('/gateway/cl2'), undefined);
        }
      },
    );
  });
