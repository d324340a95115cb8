import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { GatewayOp } from '../../../protocol/gateway.ts';
import {
  chunkBytes,
  STREAM_WINDOW,
  wholeText,
  type Chunk,
  type FromWorker,
  type RelayRequest,
} from '../../../protocol/relay.ts';
import { relay } from '../../../workers/proxy/relay.ts';
import { RelayControl } from '../../../workers/proxy/relay-control.ts';
import { targetFor } from './helpers.ts';

// relay() in-process against a loopback upstream: what the edge is sent for each kind of answer, and that an
// abort or a pause from the edge reaches the upstream connection.

type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

let handler: Handler = (_req, res) => res.writeHead(500).end();
/** Resolves when the upstream sees the current request's connection close. */
let closed: Promise<void> = Promise.resolve();
let received: Promise<Buffer> = Promise.resolve(Buffer.alloc(0));
let requests = 0;
const server = createServer((req, res) => {
  requests++;
  const parts: Buffer[] = [];
  let onClose!: () => void;
  closed = new Promise((r) => (onClose = r));
  res.on('close', () => onClose());
  let onBody!: (body: Buffer) => void;
  received = new Promise((r) => (onBody = r));
  req.on('data', (part: Buffer) => parts.push(part));
  req.on('end', () => {
    const body = Buffer.concat(parts);
    onBody(body);
    handler(req, res, body);
  });
});
let baseUrl = '';

before(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});
beforeEach(() => {
  requests = 0;
});

function request(op: GatewayOp, body: unknown, overrides: Partial<RelayRequest> = {}): RelayRequest {
  const bytes = new TextEncoder().encode(JSON.stringify(body));
  return {
    op,
    target: targetFor('openai', baseUrl),
    credentialRef: null,
    credentialId: null,
    requestId: 'req_test',
    clientModel: 'm',
    upstreamModelId: 'm',
    params: {},
    query: '',
    headers: {},
    body: bytes.buffer as ArrayBuffer,
    bodyStreamed: false,
    ...overrides,
  };
}

/** Runs one relay, collecting what it posts; `onPost` sees each message as it is posted. */
async function run(
  req: RelayRequest,
  onPost?: (m: FromWorker, control: RelayControl) => void,
  control = new RelayControl(),
) {
  const messages: FromWorker[] = [];
  await new Promise<void>((ended) =>
    relay(
      1,
      req,
      control,
      (m) => {
        messages.push(m);
        onPost?.(m, control);
      },
      undefined,
      ended,
    ),
  );
  return { messages, control };
}

/** The bytes the edge was sent for a stream: every data message, then the end's last chunks. */
function streamed(messages: FromWorker[]): string {
  const chunks: Chunk[] = [];
  for (const m of messages) if (m.t === 'data' || (m.t === 'end' && m.chunks)) chunks.push(...(m.chunks ?? []));
  return Buffer.concat(chunks.map(chunkBytes)).toString('utf8');
}

const last = (messages: FromWorker[]): FromWorker => messages[messages.length - 1]!;

/**
 * The upstream streams `events` large SSE events as fast as its socket takes them; `blocked` resolves once the
 * socket is full (the relay stopped reading), `finished` says whether the whole stream went out.
 */
function floodingUpstream(events: number): { event: string; blocked: Promise<void>; finished: () => boolean } {
  const event = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'x'.repeat(4000) } }] })}\n\n`;
  let onBlocked!: () => void;
  const blocked = new Promise<void>((r) => (onBlocked = r));
  let finished = false;
  handler = (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let sent = 0;
    const write = (): void => {
      while (sent < events) {
        sent++;
        if (!res.write(event)) {
          onBlocked();
          res.once('drain', write);
          return;
        }
      }
      res.end('data: [DONE]\n\n', () => (finished = true));
    };
    write();
  };
  return { event, blocked, finished: () => finished };
}
/** A data message's stream bytes: what an edge credits back once it has written them. */
const bytesOf = (m: FromWorker): number =>
  m.t === 'data' ? m.chunks.reduce((n, c) => n + chunkBytes(c).byteLength, 0) : 0;
const sse = (events: string[]): string => events.map((data) => `data: ${data}\n\n`).join('');
const USAGE = '{"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}';
const CONTENT = '{"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}],"usage":null}';

describe('relay, answers', () => {
  it('posts a whole JSON answer in one message, with its usage and the headers a client may see', async () => {
    const answer = JSON.stringify({
      id: 'c',
      choices: [],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
    });
    handler = (_req, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'up_1', 'set-cookie': 'a=b' })
        .end(answer);
    const { messages } = await run(request('chat.completions', { model: 'm', messages: [] }));
    assert.equal(messages.length, 1);
    const whole = messages[0]!;
    assert.ok(whole.t === 'whole');
    assert.equal(whole.status, 200);
    assert.deepEqual(whole.headers, { 'content-type': 'application/json', 'upstream-request-id': 'up_1' });
    assert.equal(wholeText(whole.body), answer);
    assert.equal(whole.end.usage?.totalTokens, 7);
  });

  it('relays the bytes of an answer that is not valid UTF-8 as they are, not a repaired text of them', async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"id":"c","choices":[],"note":"'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('","usage":{"total_tokens":7}}'),
    ]);
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(bytes);
    const whole = last((await run(request('chat.completions', { model: 'm', messages: [] }))).messages);
    assert.ok(whole.t === 'whole');
    assert.ok(whole.body instanceof ArrayBuffer);
    assert.deepEqual(Buffer.from(whole.body), bytes);
    assert.equal(whole.end.usage?.totalTokens, 7);
  });

  it('skips an informational 103 head and relays the answer after it', async () => {
    handler = (_req, res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload' });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}');
    };
    const { messages } = await run(request('embeddings', { model: 'm', input: 'x' }));
    const whole = last(messages);
    assert.ok(whole.t === 'whole');
    assert.equal(whole.status, 200);
    assert.equal(wholeText(whole.body), '{"data":[]}');
  });

  it('relays a stream whose usage chunk arrives cut in two, and reads that usage', async () => {
    const cut = USAGE.indexOf('usage') + 2;
    const stream = sse([CONTENT, USAGE, '[DONE]']);
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(stream.slice(0, stream.indexOf(USAGE) + cut));
      setTimeout(() => res.end(stream.slice(stream.indexOf(USAGE) + cut)), 20);
    };
    const { messages } = await run(
      request('chat.completions', { model: 'm', stream: true, stream_options: { include_usage: true } }),
    );
    assert.deepEqual(
      messages.map((m) => m.t).filter((t) => t !== 'data'),
      ['head', 'end'],
    );
    assert.equal(streamed(messages), stream);
    const end = last(messages);
    assert.ok(end.t === 'end');
    assert.deepEqual([end.end.usage?.inputTokens, end.end.usage?.outputTokens], [3, 4]);
  });

  it("takes back the usage it asked for on the client's behalf, and still meters it", async () => {
    handler = (_req, res) =>
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(sse([CONTENT, USAGE, '[DONE]']));
    const { messages } = await run(request('chat.completions', { model: 'm', stream: true }));
    assert.equal(streamed(messages), sse(['{"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}', '[DONE]']));
    const end = last(messages);
    assert.ok(end.t === 'end');
    assert.equal(end.end.usage?.totalTokens, 7);
  });

  for (const asked of [true, false]) {
    it(
      `marks the data that completes a chat stream's [DONE] as closing (usage ` +
        `${asked ? 'asked for' : 'injected'})`,
      async () => {
        const head = sse([CONTENT, USAGE]);
        handler = (_req, res) => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(`${head}data: [DO`);
          setTimeout(() => res.write('NE]\n'), 20);
          setTimeout(() => res.write('\n'), 40);
          setTimeout(() => res.end(), 60);
        };
        const body = asked
          ? { model: 'm', stream: true, stream_options: { include_usage: true } }
          : { model: 'm', stream: true };
        const { messages } = await run(request('chat.completions', body));
        const data = messages.filter((m) => m.t === 'data');
        const closingAt = data.findIndex((m) => m.closing === true);
        assert.ok(closingAt !== -1, 'a data message says the stream closed');
        assert.ok(
          data.slice(closingAt).every((m) => m.closing === true),
          'and every one after it',
        );
        // The [DONE] event is whole only with the chunk that brought its blank line.
        assert.ok(streamed(data.slice(0, closingAt + 1)).endsWith('data: [DONE]\n\n'));
        assert.ok(!streamed(data.slice(0, closingAt)).endsWith('data: [DONE]\n\n'));
      },
    );
  }

  it('names a streamed response as soon as response.created has passed', async () => {
    const created =
      '{"type":"response.created","response":{"id":"resp_9","status":"in_progress","output":[],"usage":null}}';
    handler = (_req, res) =>
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`event: response.created\ndata: ${created}\n\n`);
    const { messages } = await run(request('responses.create', { model: 'm', stream: true, input: 'x' }));
    assert.deepEqual(
      messages.find((m) => m.t === 'created'),
      { t: 'created', id: 1, responseId: 'resp_9' },
    );
    const end = last(messages);
    assert.ok(end.t === 'end');
    assert.equal(end.end.responseId, 'resp_9');
  });

  it('sends a streamed upload on as it comes and acknowledges each chunk', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"text":"ok"}');
    const control = new RelayControl();
    const parts = ['--b\r\n', 'x'.repeat(70_000), '\r\n--b--\r\n'];
    for (const part of parts) control.pushUpload(new TextEncoder().encode(part).buffer as ArrayBuffer);
    control.pushUpload(null);
    const req = request('audio.transcriptions', null, {
      body: null,
      bodyStreamed: true,
      headers: { 'content-type': 'multipart/form-data; boundary=b' },
    });
    const { messages } = await run(req, undefined, control);
    assert.equal((await received).toString('utf8'), parts.join(''));
    const acked = messages.reduce((sum, m) => sum + (m.t === 'ack' ? m.bytes : 0), 0);
    assert.equal(acked, parts.join('').length);
    assert.equal(last(messages).t, 'whole');
  });
});

describe('relay, failures', () => {
  it('keeps an upstream 4xx status and quotes its error', async () => {
    handler = (_req, res) =>
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end('{"error":{"message":"bad model","type":"invalid_request_error"}}');
    const { messages } = await run(request('chat.completions', { model: 'm', messages: [] }));
    const error = last(messages);
    assert.ok(error.t === 'error');
    assert.equal(error.error.code, 'UPSTREAM_ERROR');
    assert.equal(error.error.status, 400);
    assert.equal(error.error.details?.upstreamMessage, 'bad model');
  });

  it('reports an error whose body is over the quote limit without quoting it', async () => {
    handler = (_req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<p>'.repeat(40_000));
    const { messages } = await run(request('chat.completions', { model: 'm', messages: [] }));
    const error = last(messages);
    assert.ok(error.t === 'error');
    assert.equal(error.error.code, 'UPSTREAM_ERROR');
    assert.equal(error.error.details?.upstreamStatus, 502);
    assert.equal(error.error.details?.upstreamMessage, undefined);
  });

  it('is UPSTREAM_TIMEOUT when no head comes within the head time-out', async () => {
    handler = () => {};
    const req = request(
      'chat.completions',
      { model: 'm', messages: [] },
      { target: targetFor('openai', baseUrl, { timeouts: { connectMs: 5000, headMs: 100, idleMs: 5000 } }) },
    );
    const { messages } = await run(req);
    const error = last(messages);
    assert.ok(error.t === 'error');
    assert.equal(error.error.code, 'UPSTREAM_TIMEOUT');
    assert.equal(error.error.details?.reason, 'head_timeout');
  });

  it('ends a stream cut by the upstream with an error that carries the usage read so far', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse([CONTENT, USAGE]));
      setTimeout(() => res.destroy(), 20);
    };
    const { messages } = await run(
      request('chat.completions', { model: 'm', stream: true, stream_options: { include_usage: true } }),
    );
    assert.equal(streamed(messages), sse([CONTENT, USAGE]));
    const error = last(messages);
    assert.ok(error.t === 'error');
    assert.match(error.error.code, /^UPSTREAM_/);
    assert.equal(error.usage?.totalTokens, 7);
  });
});

describe('relay, edge controls', () => {
  // The time-outs only keep a broken abort from hanging the run; nothing here measures time.
  it('an abort before the head ends the relay, closes the upstream connection and posts only that it stopped', {
    timeout: 10_000,
  }, async () => {
    handler = () => {};
    const control = new RelayControl();
    const running = run(request('chat.completions', { model: 'm', messages: [] }), undefined, control);
    await received;
    control.abort.abort();
    control.cancelWaits();
    const { messages } = await running;
    assert.deepEqual(messages, [{ t: 'aborted', id: 1, usage: null }]);
    await closed;
  });

  it('an abort mid-stream closes the upstream connection; the last message says it stopped', {
    timeout: 10_000,
  }, async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse([CONTENT]));
    };
    let aborted = false;
    const { messages } = await run(request('chat.completions', { model: 'm', stream: true }), (m, control) => {
      if (m.t !== 'data' || aborted) return;
      aborted = true;
      control.abort.abort();
      control.cancelWaits();
    });
    await closed;
    assert.deepEqual(
      messages.map((m) => m.t),
      ['head', 'data', 'aborted'],
    );
  });

  it('a styleB stream stopped mid-way reports the input tokens of its first event', { timeout: 10_000 }, async () => {
    const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        event('message_start', {
          message: {
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            model: 'm',
            content: [],
            usage: { input_tokens: 25, output_tokens: 1 },
          },
        }) +
          event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
          event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hel' } }),
      );
    };
    let aborted = false;
    const { messages } = await run(
      request(
        'messages',
        { model: 'm', max_tokens: 10, stream: true, messages: [] },
        { target: targetFor('anthropic', baseUrl.replace(/\/v1$/, '')) },
      ),
      (m, control) => {
        if (m.t !== 'data' || aborted) return;
        aborted = true;
        control.abort.abort();
        control.cancelWaits();
      },
    );
    await closed;
    const last = messages.at(-1)!;
    assert.ok(last.t === 'aborted', JSON.stringify(messages.map((m) => m.t)));
    assert.equal(last.usage?.inputTokens, 25);
  });

  it('an abort before the call went out sends nothing upstream', async () => {
    const control = new RelayControl();
    const running = run(request('chat.completions', { model: 'm', messages: [] }), undefined, control);
    control.abort.abort();
    const { messages } = await running;
    assert.deepEqual(messages, [{ t: 'aborted', id: 1, usage: null }]);
    assert.equal(requests, 0);
  });

  it("stops reading once a window of stream bytes awaits the edge's credit, and goes on as credit comes", async () => {
    const events = 4000; // 16 MB: four windows
    const upstream = floodingUpstream(events);
    let posted = 0;
    let crediting = false;
    const control = new RelayControl();
    const running = run(
      request('chat.completions', { model: 'm', stream: true, stream_options: { include_usage: true } }),
      (m, c) => {
        posted += bytesOf(m);
        // Once crediting, the edge writes each message as it comes.
        if (crediting) c.credit(bytesOf(m));
      },
      control,
    );
    await upstream.blocked;
    // Given time to read on, a relay without the window would have read the whole stream by now.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(upstream.finished(), false);
    assert.ok(
      posted > STREAM_WINDOW / 2 && posted <= STREAM_WINDOW + 256 * 1024,
      `posted ${posted} bytes without credit`,
    );
    crediting = true;
    control.credit(posted);
    const { messages } = await running;
    assert.equal(last(messages).t, 'end');
    assert.equal(streamed(messages), upstream.event.repeat(events) + 'data: [DONE]\n\n');
  });

  it('a pause stops reading the upstream until resume, and nothing is lost', async () => {
    const events = 2000; // 8 MB: more than the socket buffers hold
    const upstream = floodingUpstream(events);
    const control = new RelayControl();
    const posted: FromWorker['t'][] = [];
    const running = run(
      request('chat.completions', { model: 'm', stream: true, stream_options: { include_usage: true } }),
      (m, c) => {
        posted.push(m.t);
        if (m.t === 'head') c.pause();
        // The edge credits what it writes, as edge/gateway/relay-response.ts does.
        c.credit(bytesOf(m));
      },
      control,
    );
    await upstream.blocked;
    // Given time to read on, a relay that ignored the pause would have posted data by now.
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(upstream.finished(), false);
    assert.equal(posted.includes('end'), false);
    assert.ok(posted.filter((t) => t === 'data').length <= 1, posted.join());
    control.resume();
    const { messages } = await running;
    assert.equal(last(messages).t, 'end');
    assert.equal(streamed(messages), upstream.event.repeat(events) + 'data: [DONE]\n\n');
  });
});
