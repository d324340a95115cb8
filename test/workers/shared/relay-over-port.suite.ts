import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { test } from 'node:test';
import { ServiceError } from '../../../protocol/errors.ts';
import type { RelayRequest } from '../../../protocol/relay.ts';
import type { RelayPool, RelaySink } from '../../../workers/shared/relay-sink.ts';
import { remoteRelayPool, serveRelayPool } from '../../../workers/shared/relay-over-port.ts';

// An edge thread's calls to the embedded runtime (workers/shared/relay-over-port.ts): the pool on the other end
// of a MessagePort answers as if it ran in the caller's thread, and the caller's controls reach its call.

const request = (body: RelayRequest['body']): RelayRequest =>
  ({
    op: 'styleA.chat_completions',
    target: { id: 'embedded/tiny.gguf', kind: 'embedded' },
    credentialRef: null,
    credentialId: null,
    requestId: 'req_1',
    clientModel: 'embedded/tiny.gguf',
    upstreamModelId: 'tiny.gguf',
    params: {},
    query: '',
    headers: {},
    body,
    bodyStreamed: false,
  }) as unknown as RelayRequest;

/** A sink that records its calls, and settles once the call has ended. */
function recording() {
  const calls: unknown[][] = [];
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  const sink: RelaySink = {
    whole: (...a) => (calls.push(['whole', a[0], a[2]]), end()),
    head: (status) => void calls.push(['head', status]),
    data: (chunks) => void calls.push(['data', ...chunks]),
    end: (e) => (calls.push(['end', e.usage?.outputTokens ?? null]), end()),
    error: (err) => (calls.push(['error', err.code]), end()),
    aborted: () => (calls.push(['aborted']), end()),
  };
  return { sink, calls, ended };
}

function pair(pool: RelayPool) {
  const { port1, port2 } = new MessageChannel();
  const served = serveRelayPool(port1, pool);
  return { remote: remoteRelayPool(port2), close: () => (served.close(), port2.close()) };
}

const usage = { inputTokens: 1, outputTokens: 2, cachedInputTokens: 0, reasoningTokens: 0, totalTokens: 3 };

test('a stream, a whole answer and an error cross as the pool gave them, the body as bytes', async () => {
  const seen: RelayRequest[] = [];
  const { remote, close } = pair({
    start(req, sink) {
      seen.push(req);
      if (req.requestId === 'whole') sink.whole(200, {}, '{"ok":true}', { usage: null, responseId: null });
      else if (req.requestId === 'fail') sink.error(new ServiceError('MODEL_NOT_FOUND', 'gone'), null);
      else {
        sink.head(200, { 'content-type': 'text/event-stream' });
        sink.data(['data: 1\n\n']);
        sink.end({ usage: usage as never, responseId: null });
      }
      return { body() {}, pause() {}, resume() {}, credit() {}, abort: () => false };
    },
    close: async () => undefined,
  });
  const stream = recording();
  remote.start(request(new TextEncoder().encode('{"a":1}').buffer as ArrayBuffer), stream.sink);
  await stream.ended;
  assert.deepEqual(stream.calls, [
    ['head', 200],
    ['data', 'data: 1\n\n'],
    ['end', 2],
  ]);
  assert.equal(new TextDecoder().decode(seen[0]!.body as ArrayBuffer), '{"a":1}');
  const whole = recording();
  remote.start({ ...request('{}'), requestId: 'whole' }, whole.sink);
  await whole.ended;
  assert.deepEqual(whole.calls, [['whole', 200, '{"ok":true}']]);
  const failed = recording();
  remote.start({ ...request('{}'), requestId: 'fail' }, failed.sink);
  await failed.ended;
  assert.deepEqual(failed.calls, [['error', 'MODEL_NOT_FOUND']]);
  close();
});

test("the caller's abort reaches the call, which ends with its usage so far", async () => {
  let sinkThere!: RelaySink;
  const { remote, close } = pair({
    start(_req, sink) {
      sinkThere = sink;
      sink.head(200, {});
      return {
        body() {},
        pause() {},
        resume() {},
        credit() {},
        abort: () => (sinkThere.aborted(usage as never), true),
      };
    },
    close: async () => undefined,
  });
  const call = recording();
  const handle = remote.start(request('{}'), call.sink);
  assert.equal(handle.abort(), true);
  await call.ended;
  assert.deepEqual(call.calls, [['head', 200], ['aborted']]);
  assert.equal(handle.abort(), false, 'nothing more follows an ended call');
  close();
});
