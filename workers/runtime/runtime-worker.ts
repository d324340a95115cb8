import { parentPort } from 'node:worker_threads';
import { ServiceError } from '../../protocol/errors.ts';
import type { FromWorker, RelayRequest } from '../../protocol/relay.ts';
import type { RuntimeConfig, ToRuntime } from '../../protocol/runtime.ts';
import { chatCompletion, parseChatRequest } from './chat.ts';
import { embeddings, parseEmbeddingsRequest } from './embeddings.ts';
import { createModelManager } from './models.ts';
import { callOutput, type CallOutput } from './output.ts';

// The runtime worker's message loop: the relay protocol, requests multiplexed by id, each run against a
// model loaded in this thread. Upload and flow-control messages have nothing to act on: bodies arrive whole,
// and generation is paced by the model, not the socket.

const port = parentPort!;
const models = createModelManager();
const running = new Map<number, { abort: AbortController; out: CallOutput }>();

const post = (message: FromWorker, transfer?: ArrayBuffer[]) => port.postMessage(message, transfer ?? []);

function readBody(req: RelayRequest): Record<string, unknown> {
  if (!req.body) throw new ServiceError('INVALID_REQUEST', 'The embedded runtime needs a JSON body.');
  const body: unknown = JSON.parse(Buffer.from(req.body).toString('utf8'));
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new ServiceError('INVALID_JSON', 'The body must be a JSON object.');
  return body as Record<string, unknown>;
}

async function serve(req: RelayRequest, config: RuntimeConfig, out: CallOutput, signal: AbortSignal): Promise<void> {
  const name = req.upstreamModelId;
  if (!name) throw new ServiceError('MODEL_NOT_FOUND', 'The call names no embedded model.', { param: 'model' });
  const clientModel = req.clientModel ?? name;
  const body = readBody(req);
  switch (req.op) {
    case 'chat.completions': {
      const parsed = parseChatRequest(body);
      return chatCompletion(await models.get(name, config), clientModel, parsed, out, signal);
    }
    case 'embeddings': {
      const parsed = parseEmbeddingsRequest(body);
      return embeddings(await models.get(name, config), clientModel, parsed, out);
    }
    default:
      throw new ServiceError('MODEL_ENDPOINT_NOT_SUPPORTED', `The embedded runtime does not serve \`${req.op}\` yet.`, { param: 'model' });
  }
}

port.on('message', (m: ToRuntime) => {
  switch (m.t) {
    case 'start': {
      const abort = new AbortController();
      const out = callOutput(m.id, post);
      running.set(m.id, { abort, out });
      serve(m.req, m.config, out, abort.signal)
        .catch((err: unknown) => out.fail(err, null))
        .finally(() => running.delete(m.id));
      return;
    }
    case 'abort': {
      const call = running.get(m.id);
      if (call) {
        call.out.silence();
        call.abort.abort();
        running.delete(m.id);
      }
      return;
    }
    case 'body':
    case 'pause':
    case 'resume':
      return;
  }
});
