import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startRelay, type RelayHookName, type RelayHooks } from '../../../edge/gateway/relay-response.ts';
import { ClientClosed } from '../../../protocol/errors.ts';
import type { RelayRequest } from '../../../protocol/relay.ts';
import type { RelayPool, RelaySink } from '../../../workers/shared/relay-sink.ts';

// Regression (W2.6): a hook that threw (remembering a response ID LMDB refused) propagated out of the sink
// method into the relay worker's message handler, and the process died. A failing hook is now reported
// through onHookError and the call answers as if it had not failed.

const END = { usage: null, responseId: 'resp_1' };
const JSON_HEAD = { 'content-type': 'application/json' };
const boom = (what: string) => () => {
  throw new Error(`${what} failed with sk-proj-abcdefghijklmnopqrstuv`);
};

function relay(
  hooks: Omit<RelayHooks, 'onAbort' | 'onHookError'>,
  options: { abortThrows?: boolean; reportThrows?: boolean } = {},
) {
  let sink: RelaySink | null = null;
  let onAbort: (() => void) | null = null;
  const failures: [RelayHookName, string][] = [];
  const pool: RelayPool = {
    start(_req, s) {
      sink = s;
      const abort = () => {
        if (options.abortThrows) throw new Error('the worker port is gone');
        return false;
      };
      return { body() {}, pause() {}, resume() {}, credit() {}, abort };
    },
    close: async () => {},
  };
  const call = startRelay(pool, { requestId: 'req_test' } as RelayRequest, {
    ...hooks,
    onAbort: (cb) => (onAbort = cb),
    onHookError(hook, err, requestId) {
      if (options.reportThrows) throw new Error('the logger is gone');
      assert.equal(requestId, 'req_test', 'reported under the request ID');
      failures.push([hook, (err as Error).message]);
    },
  });
  return { sink: () => sink!, call, failures, clientLeaves: () => onAbort!() };
}

describe('relay hooks that throw', () => {
  it('onResponseId: reported, and the streamed answer goes on to its end', async () => {
    const { sink, call, failures } = relay({ onResponseId: boom('remember') });
    sink().head(200, { 'content-type': 'text/event-stream' });
    assert.doesNotThrow(() => sink().created?.('resp_1'));
    sink().end(END, ['data: [DONE]\n\n']);
    assert.equal((await call.result).raw, 'data: [DONE]\n\n');
    assert.equal((await call.done).outcome, 'ok');
    assert.deepEqual(
      failures.map(([hook]) => hook),
      ['onResponseId'],
    );
  });

  it('onHead on a whole answer: reported, and the answer is the upstream’s', async () => {
    const { sink, call, failures } = relay({ onHead: boom('observe headers') });
    assert.doesNotThrow(() => sink().whole(200, JSON_HEAD, '{"id":"resp_1"}', END));
    const result = await call.result;
    assert.equal(result.status, 200);
    assert.equal(result.raw, '{"id":"resp_1"}');
    assert.deepEqual(failures, [['onHead', 'observe headers failed with sk-proj-abcdefghijklmnopqrstuv']]);
  });

  it('onHead on a stream: reported, and the stream is still published', async () => {
    const { sink, call, failures } = relay({ onHead: boom('observe headers') });
    assert.doesNotThrow(() => sink().head(200, { 'content-type': 'text/event-stream' }));
    sink().end(END, ['data: 1\n\n']);
    assert.equal((await call.result).status, 200);
    assert.equal(failures.length, 1);
  });

  it('the client-abort handling: reported, and the call still ends as ClientClosed', async () => {
    const { call, failures, clientLeaves } = relay({}, { abortThrows: true });
    assert.doesNotThrow(clientLeaves);
    await assert.rejects(call.result, (err) => err instanceof ClientClosed);
    assert.equal((await call.done).outcome, 'aborted', 'the call is over, not left open');
    assert.deepEqual(failures, [['onAbort', 'the worker port is gone']]);
  });

  it('a report that throws too falls back to stderr, redacted, and still throws nothing', async (t) => {
    const lines: string[] = [];
    t.mock.method(console, 'error', (line: string) => void lines.push(line));
    const { sink, call } = relay({ onHead: boom('observe headers') }, { reportThrows: true });
    assert.doesNotThrow(() => sink().whole(200, JSON_HEAD, '{}', END));
    assert.equal((await call.result).status, 200);
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /relay onHead of req_test failed: observe headers failed with \[redacted\]/);
  });
});
