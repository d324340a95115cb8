import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RelayRequest } from '../../../protocol/relay.ts';
import { OMITTED_TOOLS_HEADER } from '../../../protocol/translation.ts';
import { logOmittedTools } from '../../../workers/proxy/omitted-tools-log.ts';
import type { RelayHandle, RelayPool, RelaySink } from '../../../workers/shared/relay-sink.ts';
import { targetFor } from './helpers.ts';

// The warning a translated Responses call logs when its answer names tools left out (omitted-tools-log.ts):
// once per call, at the head of a stream or with a whole answer, with the request ID and the tool types only;
// every other call reaches the pool with its own sink.

const handle: RelayHandle = { body() {}, pause() {}, resume() {}, credit() {}, abort: () => false };

function request(over: Partial<RelayRequest>): RelayRequest {
  return {
    op: 'responses.create',
    target: targetFor('anthropic', 'http://127.0.0.1:9'),
    credentialRef: null,
    credentialId: null,
    requestId: 'req_01TEST',
    clientModel: 'anthropic/claude-x',
    upstreamModelId: 'claude-x',
    params: {},
    query: '',
    headers: {},
    body: '{}',
    bodyStreamed: false,
    translation: 'styleA.responses<-styleB.messages',
    ...over,
  };
}

function setup() {
  const sinks: RelaySink[] = [];
  const pool: RelayPool = { start: (_req, sink) => (sinks.push(sink), handle), close: async () => {} };
  const lines: [Record<string, unknown>, string][] = [];
  const wrapped = logOmittedTools(pool, { warn: (fields, message) => lines.push([fields, message]) });
  const seen: string[] = [];
  const inner: RelaySink = {
    whole: (status) => seen.push(`whole ${status}`),
    head: (status) => seen.push(`head ${status}`),
    data: () => seen.push('data'),
    end: () => seen.push('end'),
    error: () => seen.push('error'),
    aborted: () => seen.push('aborted'),
  };
  return { wrapped, sinks, lines, seen, inner };
}

const end = { usage: null, responseId: null };

describe('omitted tools log', () => {
  test('a streamed answer naming left-out tools logs them once with the request ID; the sink sees it all', () => {
    const { wrapped, sinks, lines, seen, inner } = setup();
    wrapped.start(request({}), inner);
    sinks[0]!.head(200, { 'content-type': 'text/event-stream', [OMITTED_TOOLS_HEADER]: 'file_search,mcp' });
    sinks[0]!.data(['event: x\n\n']);
    sinks[0]!.end(end);
    assert.deepEqual(lines, [
      [
        { reqId: 'req_01TEST', omittedTools: ['file_search', 'mcp'] },
        'tools left out of a translated call: the upstream cannot run them',
      ],
    ]);
    assert.deepEqual(seen, ['head 200', 'data', 'end']);
  });

  test('a whole answer logs too; an answer without the header logs nothing', () => {
    const { wrapped, sinks, lines, inner } = setup();
    wrapped.start(request({}), inner);
    sinks[0]!.whole(200, { [OMITTED_TOOLS_HEADER]: 'web_search' }, '{}', end);
    wrapped.start(request({ requestId: 'req_02' }), inner);
    sinks[1]!.whole(200, { 'content-type': 'application/json' }, '{}', end);
    assert.deepEqual(
      lines.map(([fields]) => fields),
      [{ reqId: 'req_01TEST', omittedTools: ['web_search'] }],
    );
  });

  test('calls that cannot leave a tool out reach the pool with their own sink', () => {
    const { wrapped, sinks, inner } = setup();
    wrapped.start(request({ translation: undefined }), inner);
    wrapped.start(request({ op: 'chat.completions', translation: 'styleA.chat_completions<-styleB.messages' }), inner);
    assert.deepEqual([sinks[0] === inner, sinks[1] === inner], [true, true]);
    wrapped.start(request({}), inner);
    assert.notEqual(sinks[2], inner);
  });

  test('a logger that throws never reaches the answer', () => {
    const { sinks, seen, inner } = setup();
    const pool: RelayPool = { start: (_req, sink) => (sinks.push(sink), handle), close: async () => {} };
    const wrapped = logOmittedTools(pool, {
      warn() {
        throw new Error('log down');
      },
    });
    wrapped.start(request({}), inner);
    assert.doesNotThrow(() => sinks[0]!.head(200, { [OMITTED_TOOLS_HEADER]: 'mcp' }));
    assert.deepEqual(seen, ['head 200']);
  });
});
