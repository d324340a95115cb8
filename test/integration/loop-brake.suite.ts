import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import * as openaiFake from '../fakes/openai.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';
import { tempHome } from '../helpers/service.ts';

// The loop brake (docs/api.md, Limits) end to end: a scripted loop that sends the same tool call with the same
// arguments is paused at the Nth repeat, in both protocols; a normal session is not; a person resumes it.

const KEY = `fake-openai-key-${process.pid}`;
let clock = Date.parse('2026-11-27T10:00:00Z');
let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
const home = tempHome();

/** A chat call answering a `read_file` tool call with `args`, in session `session`. */
function toolTurn(client: OpenAI, session: string, args: string) {
  return client.chat.completions.create(
    {
      model: 'oa/gpt-loop',
      messages: [
        { role: 'user', content: 'fix the bug' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: args } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'file text' },
      ],
    },
    { headers: { 'x-session-id': session } },
  );
}

async function ok(method: string, path: string, body?: unknown, status = 200) {
  const reply = await svc.request(method, path, body === undefined ? {} : { body });
  assert.equal(reply.status, status, `${method} ${path}: ${reply.text}`);
  return reply.json;
}

before(async () => {
  oa = await openaiFake.start({ apiKey: KEY });
  oa.setModels([{ id: 'gpt-loop' }]);
  svc = await startInProcess({ home, now: () => clock });
  await ok('POST', '/v1/providers', { id: 'oa', kind: 'openai', baseUrl: oa.baseUrl, credential: KEY }, 201);
  await ok('POST', '/v1/providers/oa/actions/refresh-models');
});
after(async () => {
  await svc?.stop();
  await oa?.close();
});

describe('the loop brake', () => {
  test('off by default: a repeated tool call goes through', async () => {
    assert.deepEqual(await ok('GET', '/v1/limits/loop-brake'), { enabled: false, repeats: 5, windowSeconds: 120 });
    const client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
    for (let i = 0; i < 6; i++) await toolTurn(client, 'off', '{"path":"a.ts"}');
  });

  test('on: the third same call pauses the session, whose later calls are refused too; others go on', async () => {
    await ok('PATCH', '/v1/limits/loop-brake', { enabled: true, repeats: 3, windowSeconds: 60 });
    const client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
    const before = oa.requests.length;
    await toolTurn(client, 'loop-1', '{"path":"a.ts"}');
    await toolTurn(client, 'loop-1', '{"path":"a.ts"}');
    const refused = await svc.request('POST', '/v1/chat/completions', {
      headers: { 'x-session-id': 'loop-1' },
      body: {
        model: 'oa/gpt-loop',
        messages: [
          {
            role: 'assistant',
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } }],
          },
          { role: 'tool', tool_call_id: 'c', content: 'x' },
        ],
      },
    });
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.json.error.code, 'SESSION_PAUSED');
    assert.equal(refused.json.error.type, 'rate_limit_error');
    assert.deepEqual([refused.json.error.details.tool, refused.json.error.details.repeats], ['read_file', 3]);
    assert.equal(oa.requests.length - before, 2, 'the pausing call never went upstream');
    // A plain question in the paused session is refused; in the Anthropic SDK's shape too.
    const anthropic = new Anthropic({
      baseURL: svc.url,
      apiKey: svc.adminToken,
      maxRetries: 0,
      defaultHeaders: { 'x-claude-code-session-id': 'loop-1' },
    });
    await assert.rejects(
      anthropic.messages.create({ model: 'oa/gpt-loop', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
      (err) => err instanceof Anthropic.RateLimitError,
    );
    // A session whose tool calls differ each time, and calls without a session, are never paused.
    for (let i = 0; i < 5; i++) await toolTurn(client, 'normal', `{"path":"file-${i}.ts"}`);
    await client.chat.completions.create({ model: 'oa/gpt-loop', messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(
      (await ok('GET', '/v1/limits/sessions')).data.map((p: { session: string }) => p.session),
      ['loop-1'],
    );
  });

  test('repeats spread over more than the window do not pause', async () => {
    const client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
    for (let i = 0; i < 4; i++) {
      await toolTurn(client, 'slow', '{"path":"b.ts"}');
      clock += 31_000;
    }
  });

  test('a restart keeps the brake on and the session paused', async () => {
    await svc.stop();
    svc = await startInProcess({ home, now: () => clock });
    assert.equal((await ok('GET', '/v1/limits/loop-brake')).enabled, true);
    assert.deepEqual(
      (await ok('GET', '/v1/limits/sessions')).data.map((p: { session: string; tool: string }) => [p.session, p.tool]),
      [['loop-1', 'read_file']],
    );
  });

  test('a person resumes the session; it is audited; unknown sessions and bad settings are refused', async () => {
    const resumed = await ok('POST', '/v1/limits/sessions/loop-1/resume');
    assert.deepEqual([resumed.session, resumed.resumed], ['loop-1', true]);
    const client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
    await toolTurn(client, 'loop-1', '{"path":"a.ts"}');
    assert.deepEqual((await ok('GET', '/v1/limits/sessions')).data, []);
    const audit = await ok('GET', '/v1/audit-events?resourceType=session');
    assert.deepEqual(
      audit.data.map((e: { action: string; resourceId: string }) => [e.action, e.resourceId]),
      [['session.resume', 'loop-1']],
    );
    assert.equal((await svc.request('POST', '/v1/limits/sessions/loop-1/resume')).status, 404);
    assert.equal((await svc.request('POST', `/v1/limits/sessions/${'x'.repeat(3000)}/resume`)).status, 404);
    for (const body of [{ repeats: 1 }, { windowSeconds: 0 }, { enabled: 'yes' }, { other: 1 }, { repeats: 2.5 }])
      assert.equal((await svc.request('PATCH', '/v1/limits/loop-brake', { body })).status, 400, JSON.stringify(body));
    assert.equal((await svc.request('GET', '/v1/limits/sessions?x=1')).status, 400);
    await ok('PATCH', '/v1/limits/loop-brake', { enabled: false });
  });
});
