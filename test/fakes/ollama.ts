import { messagesRoutes } from './anthropic/messages.ts';
import { bearerOf, startFake, type Handler, type RecordedRequest, fakeControls } from './http.ts';
import { chatRoutes } from './openai/chat.ts';
import { responsesRoutes } from './openai/responses.ts';
import type { StyleAContext } from './openai/shared.ts';
import { embeddingsRoutes } from './openai/vectors.ts';
import { createState, type ScriptControls } from './script.ts';
import type { StreamControls } from './stream.ts';

export { DEFAULT_OUTPUT, DEFAULT_USAGE, type FakeOutput, type FakeToolCall, type FakeUsage } from './script.ts';

// An Ollama daemon: `GET /api/tags` -> `{models: [{name, model, modified_at, size, digest, details}]}`,
// errors as `{error: "..."}`. Ollama has no auth of its own; `apiKey` stands for a daemon behind an
// authenticating reverse proxy, which answers 401 to a missing or wrong Bearer token.
// Its compatibility layers: OpenAI's chat completions (streaming, include_usage), embeddings and stateless
// responses under /v1, chat usage as the three totals only; Anthropic's POST /v1/messages, usage without
// cache counters.

export interface FakeModel {
  /** With its tag, `llama3.2:latest`. */
  name: string;
  family?: string;
  families?: string[];
  parameterSize?: string;
  quantization?: string;
  size?: number;
}

export interface OllamaFakeOptions {
  apiKey?: string;
  /** False models an Ollama that ignores `encoding_format` and always answers floats. Default true. */
  base64Embeddings?: boolean;
}

export interface OllamaFake extends StreamControls, ScriptControls {
  /** The daemon root, as a provider record takes it. */
  baseUrl: string;
  requests: RecordedRequest[];
  setModels(models: FakeModel[]): void;
  failNext(status: number, body: unknown, headers?: Record<string, string>): void;
  hangNext(): void;
  close(): Promise<void>;
}

function tag(m: FakeModel, index: number): Record<string, unknown> {
  const family = m.family ?? 'llama';
  return {
    name: m.name,
    model: m.name,
    modified_at: '2025-05-01T12:00:00.000000000+02:00',
    size: m.size ?? 2_019_393_189,
    digest: index.toString(16).padStart(64, 'a'),
    details: {
      parent_model: '',
      format: 'gguf',
      family,
      families: m.families ?? [family],
      parameter_size: m.parameterSize ?? '3.2B',
      quantization_level: m.quantization ?? 'Q4_K_M',
    },
  };
}

export async function start(options: OllamaFakeOptions = {}): Promise<OllamaFake> {
  let models: FakeModel[] = [];
  const state = createState();
  const ctx: StyleAContext = { dialect: 'ollama', state };
  const routes: Record<string, Handler> = {
    'GET /': () => ({
      status: 200,
      body: 'Ollama is running',
      headers: { 'content-type': 'text/plain; charset=utf-8' },
    }),
    'GET /api/version': () => ({ status: 200, body: { version: '0.12.0' } }),
    'GET /api/tags': () => ({ status: 200, body: { models: models.map(tag) } }),
    ...chatRoutes(ctx, '/v1'),
    ...embeddingsRoutes(ctx, '/v1', { base64: options.base64Embeddings ?? true }),
    // Ollama's Responses layer is stateless: create only, no retrieval by id.
    'POST /v1/responses': responsesRoutes(ctx, '/v1').create,
    ...messagesRoutes({ dialect: 'ollama', state }),
  };
  const apiKey = options.apiKey;
  const server = await startFake({
    routes,
    authenticate:
      apiKey === undefined
        ? undefined
        : (req) => (bearerOf(req) === apiKey ? null : { status: 401, body: { error: 'unauthorized' } }),
    notFound: () => ({ status: 404, body: '404 page not found', headers: { 'content-type': 'text/plain' } }),
    invalid: (message) => ({ status: 400, body: { error: message } }),
  });

  return {
    ...fakeControls(server, state),
    baseUrl: server.origin,
    setModels(next) {
      models = [...next];
    },
  };
}
