import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { test } from 'node:test';
import { forwardClient, forwardedRoutes } from '../../../edge/http/forward-routes.ts';
import { routeShapes, serveForwarded } from '../../../edge/http/forward-serve.ts';
import { route, type RouteContext, type RouteDef } from '../../../edge/http/router.ts';
import type { ResponseWriter } from '../../../edge/http/types.ts';
import { ClientClosed, ServiceError } from '../../../protocol/errors.ts';
import { FORWARD_STREAM_WINDOW, type FromControl, type ToControl } from '../../../protocol/forward.ts';

// Forwarded requests (edge/http/forward-routes.ts and forward-serve.ts) across a real MessagePort: what a route
// returns, throws or streams on the control thread reaches the edge thread's app as if the route ran there.

function pair(routes: RouteDef[]) {
  const { port1, port2 } = new MessageChannel();
  const server = serveForwarded(routes, (m, transfer) => port1.postMessage(m, transfer ?? []));
  port1.on('message', (m: ToControl) => server.take(m));
  const client = forwardClient((m, transfer) => port2.postMessage(m, transfer ?? []));
  port2.on('message', (m: FromControl) => client.take(m));
  const close = () => {
    port1.close();
    port2.close();
  };
  return { server, client, close };
}

function ctx(body: string | null = null): RouteContext<unknown> & { aborts: (() => void)[] } {
  const aborts: (() => void)[] = [];
  return {
    req: {
      method: 'POST',
      path: '/x',
      query: '',
      headers: { 'content-type': 'application/json' },
      body: body === null ? null : Buffer.from(body),
    },
    requestId: 'req_1',
    principal: { tokenId: 'tok_1', scopes: ['manage'], serviceAccountId: null },
    params: {},
    body: null,
    bodyStream: null,
    onAbort: (cb) => void aborts.push(cb),
    aborts,
  };
}

/** A writer that records what it was given and answers `full()` to writes. */
function recorder(full: () => boolean) {
  const seen: string[] = [];
  let writable: (() => void) | null = null;
  let ended!: () => void;
  const done = new Promise<void>((resolve) => (ended = resolve));
  const out: ResponseWriter = {
    head: (status) => void seen.push(`head ${status}`),
    write: (chunk) => (seen.push(`data ${String(chunk)}`), !full()),
    end: (chunk) => (seen.push(`end ${chunk ?? ''}`), ended()),
    abort: () => (seen.push('abort'), ended()),
    onWritable: (cb) => void (writable = cb),
    onAbort: () => undefined,
  };
  return { out, seen, done, drain: () => writable?.() };
}

test('a typed body is checked there, and the answer or the ServiceError comes back as it was', async () => {
  const { Type } = await import('@sinclair/typebox');
  const { TypeCompiler } = await import('@sinclair/typebox/compiler');
  const body = TypeCompiler.Compile(Type.Object({ n: Type.Number() }, { additionalProperties: false }));
  const { client, close } = pair([
    route({
      method: 'POST',
      path: '/x',
      scope: 'manage',
      body,
      handle: (c) => ({ status: 201, body: { n: c.body.n } }),
    }),
    route({
      method: 'POST',
      path: '/y',
      scope: 'manage',
      handle: () => {
        throw new ServiceError('CONFLICT', 'taken', { param: 'name' });
      },
    }),
  ]);
  assert.deepEqual(await client.forward('POST /x', ctx('{"n":4}')), { status: 201, body: { n: 4 } });
  await assert.rejects(client.forward('POST /x', ctx('{"n":"4"}')), (err: ServiceError) => err.status === 400);
  await assert.rejects(
    client.forward('POST /y', ctx()),
    (err: ServiceError) => err instanceof ServiceError && err.code === 'CONFLICT' && err.param === 'name',
  );
  close();
});

test('a stream arrives in order, pauses the route past the window and resumes on the credits', async () => {
  let writes = 0;
  let resumed = 0;
  const chunk = 'x'.repeat(64 * 1024);
  const { client, close } = pair([
    route({
      method: 'GET',
      path: '/s',
      scope: 'read',
      handle: () => ({
        stream(out) {
          out.head(200, {});
          const pump = () => {
            while (writes < 8) {
              writes++;
              if (!out.write(chunk)) return;
            }
            out.end('done');
          };
          out.onWritable(() => {
            resumed++;
            pump();
          });
          pump();
        },
      }),
    }),
  ]);
  let socketFull = true;
  const result = await client.forward('GET /s', ctx());
  const rec = recorder(() => socketFull);
  result.stream!(rec.out);
  // The route stops once the edge thread holds a window's worth unwritten: its socket is full here. (The route
  // ran before the stream's first message left.)
  assert.equal(writes, FORWARD_STREAM_WINDOW / chunk.length);
  socketFull = false;
  rec.drain();
  await rec.done;
  assert.ok(resumed >= 1);
  assert.deepEqual(rec.seen, ['head 200', ...Array(8).fill(`data ${chunk}`), 'end done']);
  close();
});

test('a client that leaves reaches the route and settles its request; closing fails the calls waiting', async () => {
  let left!: () => void;
  const gone = new Promise<void>((resolve) => (left = resolve));
  const { client, close } = pair([
    route({
      method: 'GET',
      path: '/wait',
      scope: 'read',
      handle: (c) => {
        c.onAbort(left);
        return new Promise(() => undefined);
      },
    }),
  ]);
  const c = ctx();
  const waiting = client.forward('GET /wait', c);
  // The call and the leaving cross the port in order: the route has registered its callback by then.
  // The edge thread's request settles at once, as a client that left (499 in the log), not when the route answers.
  const settled = assert.rejects(waiting, ClientClosed);
  for (const abort of c.aborts) abort();
  await gone;
  await settled;
  const second = client.forward('GET /wait', ctx());
  client.close();
  await assert.rejects(second, (err: ServiceError) => err.code === 'OVERLOADED');
  close();
});

test('a stream its writer ends (a HEAD after its head) releases the route on the control thread', async () => {
  let released!: () => void;
  const gone = new Promise<void>((resolve) => (released = resolve));
  const { client, close } = pair([
    route({
      method: 'GET',
      path: '/events',
      scope: 'read',
      handle: () => ({
        stream(out) {
          out.onAbort(released);
          out.head(200, {});
        },
      }),
    }),
  ]);
  const result = await client.forward('GET /events', ctx());
  const aborts: (() => void)[] = [];
  const rec = recorder(() => false);
  result.stream!({ ...rec.out, onAbort: (cb) => void aborts.push(cb) });
  assert.equal(aborts.length, 1, 'the forwarded stream listens for its writer ending it');
  aborts[0]!();
  await gone;
  close();
});

test('routes an edge thread forwards keep their method, path, scope and whether they read a body', () => {
  const routes = [
    route({ method: 'GET', path: '/a/:id', scope: ['read', 'manage'], handle: () => ({}) }),
    route({ method: 'POST', path: '/b', scope: 'public', rawBody: () => 'buffer', handle: () => ({}) }),
  ];
  const { client, close } = pair(routes);
  const shapes = routeShapes(routes);
  assert.deepEqual(shapes, [
    { method: 'GET', path: '/a/:id', scope: ['read', 'manage'], body: false },
    { method: 'POST', path: '/b', scope: 'public', body: true },
  ]);
  const stubs = forwardedRoutes(shapes, client);
  assert.deepEqual(
    stubs.map((r) => [r.method, r.path, r.scope, r.rawBody?.({ method: 'POST', path: '/b', query: '', headers: {} })]),
    [
      ['GET', '/a/:id', ['read', 'manage'], undefined],
      ['POST', '/b', 'public', 'buffer'],
    ],
  );
  close();
});
