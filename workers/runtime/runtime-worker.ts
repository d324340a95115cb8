import { parentPort } from 'node:worker_threads';
import { ServiceError, toServiceError } from '../../protocol/errors.ts';
import { CallTable } from '../../state/call-table.ts';
import type { RelayRequest } from '../../protocol/relay.ts';
import type {
  BenchmarkFigures,
  DraftChoice,
  FromRuntime,
  RuntimeConfig,
  RuntimeControl,
  ToRuntime,
} from '../../protocol/runtime.ts';
import { runBenchmark } from './benchmark.ts';
import { chatCompletion, parseChatRequest } from './chat.ts';
import { embeddings, parseEmbeddingsRequest } from './embeddings.ts';
import type { DraftModel } from './generate.ts';
import { messages, parseMessagesRequest } from './messages.ts';
import { countTokens, messagesHistory, responsesHistory } from './count-tokens.ts';
import { parseResponsesRequest, responsesOutput } from './responses.ts';
import { createModelManager } from './models.ts';
import { callOutput, type CallOutput } from './output.ts';

// The runtime worker's message loop: the relay protocol, requests multiplexed by id, each run against a
// model loaded in this thread, plus control calls (load, unload, list). Bodies arrive whole, so upload
// messages have nothing to act on.

const port = parentPort!;
const models = createModelManager({ onEvent: (event) => port.postMessage(event) });
const running = new CallTable<{ abort: AbortController; out: CallOutput }>();

const post = (message: FromRuntime, transfer?: ArrayBuffer[]) => port.postMessage(message, transfer ?? []);

function readBody(req: RelayRequest): Record<string, unknown> {
  if (!req.body) throw new ServiceError('INVALID_REQUEST', 'The embedded runtime needs a JSON body.');
  // withEmbeddedRuntime (runtime-pool.ts) turns an arena body into bytes: this worker has no view of the arena.
  if (!(typeof req.body === 'string' || req.body instanceof ArrayBuffer))
    throw new Error('the runtime takes a body as text or bytes');
  const body: unknown = JSON.parse(typeof req.body === 'string' ? req.body : Buffer.from(req.body).toString('utf8'));
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw new ServiceError('INVALID_JSON', 'The body must be a JSON object.');
  return body as Record<string, unknown>;
}

/** Models this call holds: their keep-alive clocks wait until it ends. */
type Held = (() => void)[];

async function use(name: string, config: RuntimeConfig, held: Held) {
  const { model, release } = await models.use(name, config);
  held.push(release);
  return model;
}

async function draftOf(choice: DraftChoice | null, config: RuntimeConfig, held: Held): Promise<DraftModel | null> {
  if (!choice) return null;
  return { model: await use(choice.name, config, held), modelId: choice.modelId };
}

async function serve(
  req: RelayRequest,
  config: RuntimeConfig,
  draft: DraftChoice | null,
  out: CallOutput,
  signal: AbortSignal,
): Promise<void> {
  const held: Held = [];
  try {
    await serveHeld(req, config, draft, out, signal, held);
  } finally {
    for (const release of held) release();
  }
}

async function serveHeld(
  req: RelayRequest,
  config: RuntimeConfig,
  draft: DraftChoice | null,
  out: CallOutput,
  signal: AbortSignal,
  held: Held,
): Promise<void> {
  const name = req.upstreamModelId;
  if (!name) throw new ServiceError('MODEL_NOT_FOUND', 'The call names no embedded model.', { param: 'model' });
  const clientModel = req.clientModel ?? name;
  const body = readBody(req);
  switch (req.op) {
    case 'chat.completions': {
      const parsed = parseChatRequest(body);
      return chatCompletion(
        await use(name, config, held),
        await draftOf(draft, config, held),
        clientModel,
        parsed,
        out,
        signal,
      );
    }
    case 'messages': {
      const parsed = parseMessagesRequest(body);
      return messages(
        await use(name, config, held),
        await draftOf(draft, config, held),
        clientModel,
        parsed,
        out,
        signal,
      );
    }
    case 'embeddings': {
      const parsed = parseEmbeddingsRequest(body);
      return embeddings(await use(name, config, held), clientModel, parsed, out);
    }
    case 'responses.create': {
      const { chat, call } = parseResponsesRequest(body);
      return chatCompletion(
        await use(name, config, held),
        await draftOf(draft, config, held),
        clientModel,
        chat,
        responsesOutput(out, call),
        signal,
      );
    }
    case 'messages.count_tokens':
    case 'responses.input_tokens': {
      const history = req.op === 'messages.count_tokens' ? messagesHistory(body) : responsesHistory(body);
      const inputTokens = countTokens(await use(name, config, held), history);
      return out.whole(
        200,
        req.op === 'messages.count_tokens'
          ? { input_tokens: inputTokens }
          : { object: 'response.input_tokens', input_tokens: inputTokens },
        null,
      );
    }
    default:
      throw new ServiceError('MODEL_ENDPOINT_NOT_SUPPORTED', `The embedded runtime does not serve \`${req.op}\` yet.`, {
        param: 'model',
      });
  }
}

/** Control calls that can stop (benchmarks), by control id. */
const stoppable = new Map<number, AbortController>();

async function control(
  id: number,
  c: RuntimeControl,
  config: RuntimeConfig,
): Promise<{ unloaded?: boolean; benchmark?: BenchmarkFigures }> {
  switch (c.op) {
    case 'benchmark': {
      const abort = new AbortController();
      stoppable.set(id, abort);
      let last = 0;
      const progress = (p: number) => {
        // Steps of at least 0.05, as load progress: the edge needs a few steps, not one message per token.
        if (p - last < 0.05 && p < 1) return;
        last = p;
        post({ t: 'control-progress', id, progress: p });
      };
      try {
        return { benchmark: await runBenchmark(models, c, config, abort.signal, progress) };
      } finally {
        stoppable.delete(id);
      }
    }
    case 'load':
      // Loaded with no call: the keep-alive clock starts now.
      // Not `byCall`: the action's job publishes its own model.loaded.
      (await models.use(c.name, config, false)).release();
      return {};
    case 'unload':
      return { unloaded: await models.unload(c.name, config) };
    case 'loaded':
      return {};
  }
}

port.on('message', (m: ToRuntime) => {
  switch (m.t) {
    case 'start': {
      const abort = new AbortController();
      const out = callOutput(m.id, post);
      running.set(m.id, { abort, out });
      serve(m.req, m.config, m.draft, out, abort.signal)
        .catch((err: unknown) => out.fail(err, null))
        .finally(() => {
          running.delete(m.id);
          out.settled();
        });
      return;
    }
    case 'control': {
      control(m.id, m.control, m.config).then(
        (r) => post({ t: 'control', id: m.id, ok: true, loaded: models.list(), ...r }),
        (err: unknown) => post({ t: 'control', id: m.id, ok: false, error: toServiceError(err).toPayload() }),
      );
      return;
    }
    case 'cancel':
      stoppable.get(m.id)?.abort();
      return;
    case 'close':
      // A thread stopped while llama.cpp disposes a model (or loads one) aborts the whole process: the edge
      // waits for this answer before it stops the thread.
      for (const c of stoppable.values()) c.abort();
      for (const call of running.values()) if (call.out.abort()) call.abort.abort();
      void models.close().finally(() => post({ t: 'closed' }));
      return;
    case 'abort': {
      // The call ends with an `aborted` message once its generation has stopped (see callOutput), carrying
      // the tokens evaluated and generated until then.
      const call = running.get(m.id);
      if (call?.out.abort()) call.abort.abort();
      return;
    }
    case 'body':
    case 'pause':
    case 'resume':
    case 'credit':
      return;
  }
});
