import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import * as anthropicFake from '../fakes/anthropic.ts';
import {
  addProvider,
  ANSWER_SENTINEL,
  distinctUsage,
  messagesUsage,
  requestIds,
  usageLine,
  type ToolCounts,
} from '../helpers/gateway.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';
import type { FakeUsage } from '../fakes/script.ts';

// The Responses API for a model whose provider speaks only Messages (an anthropic model), as Codex CLI
// calls it: the official openai client's responses.create and responses.stream, a function tool round
// trip, upstream errors, and token counting. Usage reaches the client and the meter exactly as the
// upstream reported it, cache reads and writes included.

const TEXT = `Answered over Messages, ${ANSWER_SENTINEL} intact.`;
const MODEL = 'anthropic/claude-resp-1';
const WEATHER: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

let svc: InProcessService;
let an: anthropicFake.AnthropicFake;
let client: OpenAI;
const ids = requestIds();

before(async () => {
  [an, svc] = await Promise.all([anthropicFake.start({ apiKey: 'fake-anthropic-key' }), startInProcess()]);
  an.setModels([{ id: 'claude-resp-1' }]);
  an.setOutput({ text: TEXT, chunks: 4, argumentChunks: 3, toolCalls: 'none' });
  assert.equal(await addProvider(svc, { kind: 'anthropic', baseUrl: an.baseUrl, credential: 'fake-anthropic-key' }), 1);
  client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0, fetch: ids.fetch });
});
after(async () => {
  await svc?.stop();
  await an?.close();
});

const lastSent = () => an.requests.at(-1)!;
const lastJson = () => lastSent().json as Record<string, any>;

/** A usage no other call reports; the fake keeps what it is given until told otherwise, 1-hour writes too. */
const usage = (seed: number, oneHourWrites = 0): FakeUsage => ({
  ...distinctUsage(seed),
  cacheCreation1hTokens: oneHourWrites,
});

/** The Responses usage for what the fake reported: every input token, cache reads and writes in the details. */
function responsesUsage(u: FakeUsage): OpenAI.Responses.ResponseUsage {
  const input = u.inputTokens + u.cacheCreationTokens + u.cachedTokens;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: u.cachedTokens, cache_write_tokens: u.cacheCreationTokens },
    output_tokens: u.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + u.outputTokens,
  };
}

async function assertMetered(reqId: string, u: FakeUsage, toolCalls: ToolCounts = {}): Promise<void> {
  assert.deepEqual(await usageLine(svc, reqId), {
    reqId,
    op: 'responses.create',
    providerId: 'anthropic',
    modelId: MODEL,
    outcome: 'ok',
    usage: messagesUsage(u, { cacheCounters: true, toolCalls }),
  });
}

describe('responses over messages', () => {
  test(
    'responses.create: instructions as system, the default max_tokens, a response object with the upstream ' + 'usage',
    async () => {
      const u = usage(11, 2);
      an.setUsage(u);
      const { result, reqId } = await ids.call(() =>
        client.responses.create({
          model: MODEL,
          instructions: 'Be brief.',
          input: 'Hi',
          safety_identifier: 'user-42',
          temperature: 0.2,
        }),
      );
      assert.deepEqual(
        [result.object, result.status, result.model, result.output_text],
        ['response', 'completed', MODEL, TEXT],
      );
      assert.match(result.id, /^resp_/);
      assert.deepEqual(result.usage, responsesUsage(u));
      assert.equal(lastSent().path, '/v1/messages');
      assert.equal(lastSent().headers['anthropic-version'], '2023-06-01');
      assert.deepEqual(lastJson(), {
        model: 'claude-resp-1',
        system: [{ type: 'text', text: 'Be brief.' }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
        max_tokens: 4096,
        temperature: 0.2,
        metadata: { user_id: 'user-42' },
      });
      await assertMetered(reqId, u);
    },
  );

  test(
    'responses.stream: the Responses event sequence, text deltas, response.completed with the upstream ' + 'usage',
    async () => {
      const u = usage(12);
      an.setUsage(u);
      const { result, reqId } = await ids.call(async () => {
        const stream = client.responses.stream({ model: MODEL, input: 'Hi', max_output_tokens: 300 });
        const types: string[] = [];
        const deltas: string[] = [];
        stream.on('event', (e) => types.push(e.type));
        stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
        return { final: await stream.finalResponse(), types, deltas };
      });
      assert.ok(result.deltas.length > 1);
      assert.equal(result.deltas.join(''), TEXT);
      assert.deepEqual(
        [...new Set(result.types)],
        [
          'response.created',
          'response.in_progress',
          'response.output_item.added',
          'response.content_part.added',
          'response.output_text.delta',
          'response.output_text.done',
          'response.content_part.done',
          'response.output_item.done',
          'response.completed',
        ],
      );
      assert.equal(result.final.output_text, TEXT);
      assert.deepEqual(result.final.usage, responsesUsage(u));
      assert.deepEqual([lastJson().stream, lastJson().max_tokens], [true, 300]);
      await assertMetered(reqId, u);
    },
  );

  test(
    'a function tool round trip: tool_use comes back as a function_call, its output goes up as a ' + 'tool_result',
    async () => {
      const u = usage(13);
      an.setUsage(u);
      an.setOutput({ text: '', toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] });
      const { result: first, reqId } = await ids.call(() =>
        client.responses
          .stream({
            model: MODEL,
            input: 'Weather in Oslo?',
            tools: [WEATHER],
            parallel_tool_calls: false,
            reasoning: { effort: 'low' },
          })
          .finalResponse(),
      );
      const call = first.output.find((item) => item.type === 'function_call');
      assert.ok(call && call.type === 'function_call', JSON.stringify(first.output));
      assert.deepEqual(
        [call.name, JSON.parse(call.arguments), first.status],
        ['get_weather', { city: 'Oslo' }, 'completed'],
      );
      assert.match(call.call_id, /^toolu_01/);
      assert.deepEqual(first.usage, responsesUsage(u));
      const sent = lastJson();
      assert.deepEqual(sent.tools, [
        { name: 'get_weather', description: 'Current weather', input_schema: WEATHER.parameters },
      ]);
      assert.deepEqual(
        [sent.tool_choice, sent.thinking, sent.max_tokens],
        [{ type: 'auto', disable_parallel_tool_use: true }, { type: 'enabled', budget_tokens: 4096 }, 8192],
      );
      await assertMetered(reqId, u, { get_weather: 1 });

      an.setOutput({ text: TEXT, toolCalls: 'none' });
      const second = await client.responses.create({
        model: MODEL,
        tools: [WEATHER],
        input: [
          { role: 'user', content: 'Weather in Oslo?' },
          ...(first.output as OpenAI.Responses.ResponseInputItem[]),
          { type: 'function_call_output', call_id: call.call_id, output: '{"temp":4}' },
        ],
      });
      assert.equal(second.output_text, TEXT);
      assert.deepEqual(lastJson().messages, [
        { role: 'user', content: [{ type: 'text', text: 'Weather in Oslo?' }] },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: call.call_id, name: 'get_weather', input: { city: 'Oslo' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.call_id, content: '{"temp":4}' }] },
      ]);
    },
  );

  test(
    'upstream errors reach the client in the styleA shape with their status class; an in-stream error fails the ' +
      'stream',
    async () => {
      // Text long enough for the in-stream error to land mid-answer, whatever an earlier test left.
      an.setOutput({ text: TEXT, toolCalls: 'none' });
      an.failNext(400, {
        type: 'error',
        error: { type: 'invalid_request_error', message: 'messages: roles must alternate' },
        request_id: 'req_x',
      });
      const bad = await client.responses.create({ model: MODEL, input: 'x' }).catch((e: unknown) => e);
      assert.ok(bad instanceof OpenAI.BadRequestError, String(bad));
      assert.deepEqual((bad.error as { details: Record<string, unknown> }).details, {
        providerId: 'anthropic',
        upstreamStatus: 400,
        upstreamType: 'invalid_request_error',
        upstreamMessage: 'messages: roles must alternate',
      });
      an.failNext(
        429,
        { type: 'error', error: { type: 'rate_limit_error', message: 'Slow down.' } },
        { 'retry-after': '5' },
      );
      const limited = await client.responses.create({ model: MODEL, input: 'x' }).catch((e: unknown) => e);
      assert.ok(limited instanceof OpenAI.RateLimitError, String(limited));
      an.streamErrorNext({ afterChunks: 3 });
      const stream = await client.responses.create({ model: MODEL, input: 'x', stream: true });
      const types: string[] = [];
      const broken = await (async () => {
        for await (const event of stream) types.push(event.type);
      })().catch((e: unknown) => e);
      assert.ok(broken instanceof OpenAI.APIError, String(broken));
      assert.match(broken.message, /Overloaded/);
      assert.equal(types[0], 'response.created');
    },
  );

  test(
    'stored state and malformed tools are refused with a 400 naming the field, before anything goes ' + 'upstream',
    async () => {
      const sent = an.requests.length;
      for (const [extra, param] of [
        [{ store: true }, 'store'],
        [{ previous_response_id: 'resp_1' }, 'previous_response_id'],
        [{ tools: [WEATHER, { name: 'web_search' }] }, 'tools[1].type'],
        [{ text: { format: { type: 'json_object' } } }, 'text.format.type'],
        [{ reasoning: { effort: 'high' }, max_output_tokens: 512 }, 'max_output_tokens'],
      ] as const) {
        const reply = await svc.request('POST', '/v1/responses', { body: { model: MODEL, input: 'Hi', ...extra } });
        assert.equal(reply.status, 400, reply.text);
        assert.deepEqual([reply.json.error.code, reply.json.error.param], ['INVALID_REQUEST', param]);
      }
      assert.equal(an.requests.length, sent);
    },
  );

  test("/v1/responses/input_tokens is the provider's count of the translated body", async () => {
    const u = usage(14);
    an.setUsage(u);
    const reply = await svc.request('POST', '/v1/responses/input_tokens', {
      body: {
        model: MODEL,
        instructions: 'Be brief.',
        input: [
          { role: 'developer', content: 'Metric.' },
          { role: 'user', content: 'Hi' },
        ],
        tools: [WEATHER],
        tool_choice: 'required',
        reasoning: { effort: 'high' },
      },
    });
    assert.deepEqual(
      [reply.status, reply.headers['x-service-token-count'], reply.json],
      [200, 'provider', { object: 'response.input_tokens', input_tokens: u.inputTokens }],
    );
    assert.equal(lastSent().path, '/v1/messages/count_tokens');
    assert.deepEqual(lastJson(), {
      model: 'claude-resp-1',
      system: [
        { type: 'text', text: 'Be brief.' },
        { type: 'text', text: 'Metric.' },
      ],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
      tools: [{ name: 'get_weather', description: 'Current weather', input_schema: WEATHER.parameters }],
      tool_choice: { type: 'any' },
    });
    const refused = await svc.request('POST', '/v1/responses/input_tokens', {
      body: { model: MODEL, input: 'x', previous_response_id: 'resp_1' },
    });
    assert.deepEqual([refused.status, refused.json.error.param], [400, 'previous_response_id']);
  });
});
