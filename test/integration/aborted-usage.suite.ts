import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import { addProvider } from '../helpers/gateway.ts';
import { tempHome } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// A client that leaves mid-stream: the call is metered as aborted with the usage the stream had reported
// until then. A styleB stream states its input tokens in its first event; a styleA chat stream reports usage
// only at its end, so its aborted call has none.

const OPENAI_KEY = `fake-openai-${process.pid}`;
const ANTHROPIC_KEY = `fake-anthropic-${process.pid}`;

let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let an: anthropicFake.AnthropicFake;

/** Posts a streamed call and drops the connection once the first bytes of the answer arrive. */
function leaveAfterFirstBytes(path: string, body: unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: svc.port,
        method: 'POST',
        path,
        headers: {
          authorization: `Bearer ${svc.adminToken}`,
          'content-type': 'application/json',
          'anthropic-version': '2023-06-01',
        },
      },
      (res) => res.once('data', () => (req.destroy(), resolve())),
    );
    req.on('error', () => undefined);
    req.on('close', () => resolve());
    req.end(JSON.stringify(body));
    setTimeout(() => reject(new Error('no stream')), 10_000).unref();
  });
}

before(async () => {
  oa = await openaiFake.start({ apiKey: OPENAI_KEY });
  oa.setModels([{ id: 'gpt-test' }]);
  an = await anthropicFake.start({ apiKey: ANTHROPIC_KEY });
  an.setModels([{ id: 'claude-test' }]);
  svc = await startInProcess();
  await addProvider(svc, { kind: 'openai', baseUrl: oa.baseUrl, credential: OPENAI_KEY });
  await addProvider(svc, { kind: 'anthropic', baseUrl: an.baseUrl, credential: ANTHROPIC_KEY });
});
after(async () => {
  await svc.stop();
  await oa.close();
  await an.close();
});

describe('a client that leaves mid-stream', () => {
  test('a styleB stream is metered as aborted with the input tokens of its message_start', async () => {
    an.slowStreamNext({ chunkDelayMs: 300 });
    const upstream = an.nextStream();
    await leaveAfterFirstBytes('/v1/messages', {
      model: 'anthropic/claude-test',
      max_tokens: 64,
      stream: true,
      messages: [{ role: 'user', content: 'hello' }],
    });
    assert.equal((await (await upstream).ended).by, 'client-closed');
    const line = await svc.waitForLog((l) => l.msg === 'usage' && l.op === 'messages');
    assert.equal(line.outcome, 'aborted');
    // The fake's message_start: 31 input + 3 cache-creation + 8 cache-read tokens, 1 output token so far.
    const usage = line.usage as Record<string, unknown>;
    assert.equal(usage.inputTokens, 42);
    assert.equal(usage.cachedInputTokens, 8);
    assert.equal(usage.outputTokens, 1);
    // The meter counts it as a failed request with those tokens.
    const deadline = Date.now() + 10_000;
    let totals: Record<string, number> = {};
    while (Date.now() < deadline) {
      totals = (await svc.request('GET', '/v1/usage/summary?providerId=anthropic')).json.totals;
      if (totals.requests === 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(totals.failedRequests, 1);
    assert.equal(totals.inputTokens, 42);
  });

  test('a styleA chat stream, whose usage comes only at its end, is metered as aborted at the estimate', async () => {
    oa.slowStreamNext({ chunkDelayMs: 300 });
    const upstream = oa.nextStream();
    const body = { model: 'openai/gpt-test', stream: true, messages: [{ role: 'user', content: 'hello' }] };
    await leaveAfterFirstBytes('/v1/chat/completions', body);
    assert.equal((await (await upstream).ended).by, 'client-closed');
    const line = await svc.waitForLog((l) => l.msg === 'usage' && l.op === 'chat.completions');
    assert.equal(line.outcome, 'aborted');
    // The body's bytes over 3 (docs/api.md, Limits), and the text streamed before the client left over 3.
    const usage = line.usage as Record<string, unknown>;
    assert.equal(usage.estimated, true);
    assert.equal(usage.inputTokens, Math.ceil(Buffer.byteLength(JSON.stringify(body)) / 3));
    assert.equal(usage.totalTokens, (usage.inputTokens as number) + (usage.outputTokens as number));
  });
});

/** Posts a streamed call and resolves with everything the client receives until the connection ends. */
function readWhole(port: number, token: string, path: string, body: unknown, firstBytes: () => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'anthropic-version': '2023-06-01',
        },
      },
      (res) => {
        let text = '';
        res.once('data', firstBytes);
        res.on('data', (d: Buffer) => (text += d.toString('utf8')));
        res.on('end', () => resolve(text));
        res.on('error', () => resolve(text));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** A streamed Messages call, as both drain tests make it. */
const STREAMED_MESSAGE = {
  model: 'anthropic/claude-test',
  max_tokens: 64,
  stream: true,
  messages: [{ role: 'user', content: 'hello' }],
};

describe('a stream cut by the shutdown drain (W3.5 item 10)', () => {
  test(
    "ends with the protocol's error event, is logged and metered as failed with its tokens so far, and the totals " +
      'keep it after a restart',
    async () => {
      const home = tempHome();
      const first = await startInProcess({ home, env: { SWITCHYARD_DRAIN_MS: '300' } });
      await addProvider(first, { kind: 'anthropic', baseUrl: an.baseUrl, credential: ANTHROPIC_KEY });
      an.slowStreamNext({ chunkDelayMs: 2000 });
      let stopped: Promise<number | null> | null = null;
      const text = await readWhole(first.port, first.adminToken, '/v1/messages', STREAMED_MESSAGE, () => {
        stopped = first.stop();
      });
      await stopped;
      // The client heard why its answer ended: styleB's in-stream error event, as an overload it may retry.
      assert.match(text, /event: error\ndata: .*"overloaded_error"/);
      assert.match(text, /shutting down/);
      const lines = first.logLines();
      const usage = lines.find((l) => l.msg === 'usage' && l.op === 'messages')!;
      assert.equal(usage.outcome, 'failed');
      assert.equal((usage.usage as Record<string, unknown>).inputTokens, 42);
      const access = lines.find((l) => l.reqId === usage.reqId && l.msg === 'request');
      assert.equal(access?.outcome, 'upstream_failed', JSON.stringify(access));

      const again = await startInProcess({ home });
      try {
        const totals = (await again.request('GET', '/v1/usage/summary?providerId=anthropic')).json.totals;
        assert.equal(totals.requests, 1);
        assert.equal(totals.failedRequests, 1);
        assert.equal(totals.inputTokens, 42);
      } finally {
        await again.stop();
      }
    },
  );

  test('every call still running ends at the drain, on either edge thread: none waits for another', async () => {
    // With two edge threads (suites-edge2-gateway), a stopping edge thread waits until no connection is open on
    // the port, the main thread's too. The main thread's calls must end before that wait, not after it: a call
    // cut only at the main thread's close held the edge thread until uWS's idle timeout (16 s), and its client
    // waited as long for its answer's end. Four calls: the kernel spreads them between the threads.
    const service = await startInProcess({ env: { SWITCHYARD_DRAIN_MS: '300' } });
    await addProvider(service, { kind: 'anthropic', baseUrl: an.baseUrl, credential: ANTHROPIC_KEY });
    const calls = 4;
    for (let i = 0; i < calls; i++) an.slowStreamNext({ chunkDelayMs: 2000 });
    let answering = 0;
    let stopped: Promise<number | null> | null = null;
    const texts = await Promise.all(
      Array.from({ length: calls }, () =>
        readWhole(service.port, service.adminToken, '/v1/messages', STREAMED_MESSAGE, () => {
          if (++answering === calls) stopped = service.stop();
        }),
      ),
    );
    await stopped;
    for (const text of texts) assert.match(text, /event: error\ndata: .*shutting down/);
    const waited = service.logLines().filter((l) => String(l.msg).includes('connections still open'));
    assert.deepEqual(waited, []);
    assert.equal(service.logLines().filter((l) => l.msg === 'usage' && l.outcome === 'failed').length, calls);
  });
});
