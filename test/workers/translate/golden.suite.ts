import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ServiceError } from '../../../protocol/errors.ts';
import type { TranslationKey } from '../../../protocol/translation.ts';
import { TRANSLATORS, type RequestState, type TranslateContext } from '../../../workers/translate/index.ts';
import { createSseBlockReader } from '../../../workers/shared/sse.ts';

// Golden transcripts (test/fixtures/translate/<direction>/): each JSON file is one case, a client request and
// the upstream request it becomes (or the 400 it is refused with), an upstream answer and the client's, or an
// upstream error and the client's; each `<case>.upstream.sse` stream and the `<case>.client.sse` the client
// gets, byte for byte.

const ROOT = join(import.meta.dirname, '../../fixtures/translate');
const DIRECTIONS: Record<string, TranslationKey> = {
  'messages-over-chat': 'styleB.messages<-styleA.chat_completions',
  'chat-over-messages': 'styleA.chat_completions<-styleB.messages',
  'responses-over-messages': 'styleA.responses<-styleB.messages',
};

interface Case {
  name: string;
  providerKind?: TranslateContext['providerKind'];
  streamUsage?: boolean;
  includeUsage?: boolean;
  request?: Record<string, unknown>;
  upstreamRequest?: unknown;
  refused?: { status: number; code: string; param: string };
  upstreamResponse?: unknown;
  clientResponse?: unknown;
  status?: number;
  upstreamError?: unknown;
  clientError?: unknown;
}

function context(c: Case, direction: string): TranslateContext {
  const providerKind = c.providerKind ?? (direction === 'messages-over-chat' ? 'openai' : 'anthropic');
  return {
    upstreamModelId: 'upstream-model',
    clientModel: 'client-model',
    providerKind,
    streamUsage: c.streamUsage ?? providerKind !== 'anthropic',
    now: () => 1700000000,
  };
}

/**
 * The state the request step would hand over. A Responses translator also carries the call's identity there
 * (response ID, clock, item IDs, the request it echoes): a fixed one keeps the transcripts stable.
 */
function goldenState(c: Case, includeUsage: boolean): RequestState {
  let n = 0;
  const call = {
    responseId: 'resp_golden',
    createdAt: 1700000000,
    itemId: (prefix: string) => `${prefix}_${++n}`,
    request: { ...c.request, model: 'client-model' },
  };
  return Object.assign({ includeUsage }, { call });
}

for (const [direction, key] of Object.entries(DIRECTIONS)) {
  const dir = join(ROOT, direction);
  const translator = TRANSLATORS[key];
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  describe(`translation ${key}`, () => {
    test('has golden cases of every kind', () => {
      for (const prefix of ['request-', 'refuse-', 'response-', 'error-', 'stream-'])
        assert.ok(
          files.some((f) => f.startsWith(prefix)),
          prefix,
        );
    });
    for (const file of files) {
      const c = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Case;
      test(c.name, () => {
        const ctx = context(c, direction);
        if (c.request !== undefined) {
          if (c.refused !== undefined) {
            assert.throws(
              () => translator.request(structuredClone(c.request!), ctx),
              (err: unknown) =>
                err instanceof ServiceError &&
                err.status === c.refused!.status &&
                err.code === c.refused!.code &&
                err.param === c.refused!.param,
            );
          } else {
            const input = structuredClone(c.request);
            assert.deepEqual(translator.request(input, ctx).body, c.upstreamRequest);
            assert.deepEqual(input, c.request, 'the client body is not changed in place');
          }
        }
        if (c.upstreamResponse !== undefined)
          assert.deepEqual(translator.response(c.upstreamResponse, ctx, goldenState(c, false)), c.clientResponse);
        if (c.upstreamError !== undefined)
          assert.deepEqual(translator.error(c.status!, c.upstreamError), c.clientError);
        if (c.name.startsWith('stream-')) {
          const upstream = readFileSync(join(dir, `${c.name}.upstream.sse`));
          const expected = readFileSync(join(dir, `${c.name}.client.sse`), 'utf8');
          const mapper = translator.stream(ctx, goldenState(c, c.includeUsage ?? true));
          let out = '';
          const reader = createSseBlockReader((_bytes, _text, event) => {
            if (event !== null) out += mapper.push(event);
          });
          // Fed in small uneven pieces, as a socket delivers them.
          for (let at = 0; at < upstream.length; at += 37) reader.push(upstream.subarray(at, at + 37));
          reader.end();
          out += mapper.end();
          assert.equal(out, expected);
          assert.equal(mapper.closed(), true);
        }
      });
    }
  });
}
