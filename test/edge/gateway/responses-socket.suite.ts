import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { responsesSocketRoute } from '../../../edge/gateway/responses-socket.ts';
import type { Prepared } from '../../../edge/http/app.ts';
import type { EdgeResponse, ResponseWriter, SocketPeer, SocketSession } from '../../../edge/http/types.ts';

// One WebSocket connection's protocol (edge/gateway/responses-socket.ts) over a fake app and a fake peer: the
// connection's age limit, the bound on calls queued and running, a lane's order, and the client's backpressure
// carried back to the stream as write() === false until the peer drains.

type Json = Record<string, any>;

const sse = (type: string, extra: Json = {}) => `data: ${JSON.stringify({ type, ...extra })}\n\n`;

/** A stream of one response: created, `deltas` deltas, completed. */
function answer(id: string, deltas: number, hold?: (writer: ResponseWriter) => void): EdgeResponse {
  return {
    status: 0,
    headers: {},
    body: '',
    stream(out) {
      out.head(200, { 'content-type': 'text/event-stream' });
      out.write(sse('response.created', { response: { id } }));
      for (let i = 0; i < deltas; i++) out.write(sse('response.output_text.delta', { delta: `d${i}` }));
      if (hold) return hold(out);
      out.end(sse('response.completed', { response: { id, output: [] } }));
    },
  };
}

function harness(options: { answers?: (body: Json) => EdgeResponse | Promise<EdgeResponse>; now?: () => number } = {}) {
  const sent: Json[] = [];
  const bodies: Json[] = [];
  let full = false;
  let closedWith: [number, string] | null = null;
  const peer: SocketPeer = {
    send(text) {
      sent.push(JSON.parse(text));
      return !full;
    },
    close: (code, reason) => void (closedWith = [code, reason]),
  };
  let n = 0;
  const app = {
    acceptSocket: () => ({ principal: { tokenId: 'tok_a', scopes: ['inference'], serviceAccountId: null } }),
    prepare: (): Prepared =>
      ({
        requestId: 'req_x',
        bodyLimit: 1_000_000,
        abort() {},
        fail: (err: { status: number }) => ({ status: err.status, headers: {}, body: '{}' }),
        run: async (body: Buffer) => {
          const json = JSON.parse(body.toString()) as Json;
          bodies.push(json);
          return options.answers ? options.answers(json) : answer(`resp_${++n}`, 1);
        },
      }) as unknown as Prepared,
  };
  const route = responsesSocketRoute({
    app: app as never,
    maxMessageBytes: () => 1_000_000,
    isDraining: () => false,
    now: options.now,
    maxAgeMs: 1_000,
  });
  const accepted = route.accept({ method: 'GET', path: '/v1/responses', query: '', headers: {} });
  assert.ok('open' in accepted);
  let inflight = 0;
  const session: SocketSession = accepted.open(peer, { began: () => void inflight++, ended: () => void inflight-- });
  const send = (m: Json) => session.message(Buffer.from(JSON.stringify({ type: 'response.create', ...m })), false);
  const settle = () => new Promise((r) => setImmediate(r));
  return {
    sent,
    bodies,
    session,
    send,
    settle,
    inflight: () => inflight,
    closed: () => closedWith,
    setFull: (v: boolean) => void (full = v),
  };
}

describe('a Responses WebSocket connection', () => {
  it('refuses calls once it is older than its limit, and closes', async () => {
    let clock = 0;
    const h = harness({ now: () => clock });
    h.send({ model: 'm', input: 'a' });
    await h.settle();
    assert.equal(h.sent.at(-1)!.type, 'response.completed');
    clock = 1_000;
    h.send({ model: 'm', input: 'b' });
    assert.equal(h.sent.at(-1)!.error.code, 'websocket_connection_limit_reached');
    assert.deepEqual(h.closed()?.[0], 1000);
    assert.equal(h.bodies.length, 1);
  });

  it('runs a lane in order, counts its calls in flight, and bounds what is queued', async () => {
    const waits: (() => void)[] = [];
    const h = harness({ answers: (body) => new Promise((r) => waits.push(() => r(answer(body.input, 0)))) });
    for (let i = 0; i < 17; i++) h.send({ model: 'm', input: `c${i}` });
    assert.equal(h.sent.at(-1)!.error.code, 'websocket_stream_limit_reached');
    await h.settle();
    assert.equal(h.inflight(), 1, 'one call of the lane runs at a time');
    for (let i = 0; i < 16; i++) {
      waits.shift()!();
      await h.settle();
      await h.settle();
    }
    const completed = h.sent.filter((m) => m.type === 'response.completed').map((m) => m.response.id);
    assert.deepEqual(
      completed,
      Array.from({ length: 16 }, (_, i) => `c${i}`),
    );
    assert.equal(h.inflight(), 0);
  });

  it('carries the client backpressure back to the stream until the peer drains', async () => {
    let writer: ResponseWriter | null = null;
    const h = harness({ answers: () => answer('resp_bp', 0, (out) => (writer = out)) });
    h.send({ model: 'm', input: 'a' });
    await h.settle();
    h.setFull(true);
    assert.equal(writer!.write(sse('response.output_text.delta', { delta: 'x' })), false);
    let resumed = false;
    writer!.onWritable(() => (resumed = true));
    h.setFull(false);
    h.session.drained();
    assert.equal(resumed, true);
    writer!.end(sse('response.completed', { response: { id: 'resp_bp', output: [] } }));
    await h.settle();
    assert.equal(h.sent.at(-1)!.type, 'response.completed');
  });

  it('a prewarm is answered at once, and the next call continues it with its input', async () => {
    const h = harness();
    h.send({ model: 'm', input: 'warm', generate: false });
    await h.settle();
    const warmed = h.sent.at(-1)!;
    assert.equal(warmed.type, 'response.completed');
    assert.equal(h.bodies.length, 0);
    h.send({ model: 'm', input: 'go', previous_response_id: warmed.response.id });
    await h.settle();
    assert.deepEqual(
      h.bodies[0]!.input.map((item: Json) => item.content[0].text),
      ['warm', 'go'],
    );
    assert.equal(h.bodies[0]!.previous_response_id, undefined);
    assert.equal(h.bodies[0]!.stream, true);
  });

  it('when the client leaves, queued calls are dropped and the running one is told', async () => {
    let aborted = false;
    const h = harness({
      answers: () =>
        answer('resp_left', 0, (out) => {
          out.onAbort(() => (aborted = true));
        }),
    });
    h.send({ model: 'm', input: 'a' });
    h.send({ model: 'm', input: 'b' });
    await h.settle();
    h.session.closed();
    await h.settle();
    assert.equal(aborted, true);
    assert.equal(h.bodies.length, 1);
    assert.equal(h.inflight(), 0);
  });
});
