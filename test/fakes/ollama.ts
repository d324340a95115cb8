import { bearerOf, startFake, type Handler, type RecordedRequest } from './http.ts';

// An Ollama daemon: `GET /api/tags` -> `{models: [{name, model, modified_at, size, digest, details}]}`,
// errors as `{error: "..."}`. Ollama has no auth of its own; `apiKey` stands for a daemon behind an
// authenticating reverse proxy, which answers 401 to a missing or wrong Bearer token.

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
}

export interface OllamaFake {
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
  const routes: Record<string, Handler> = {
    'GET /': () => ({ status: 200, body: 'Ollama is running', headers: { 'content-type': 'text/plain; charset=utf-8' } }),
    'GET /api/version': () => ({ status: 200, body: { version: '0.12.0' } }),
    'GET /api/tags': () => ({ status: 200, body: { models: models.map(tag) } }),
  };
  const apiKey = options.apiKey;
  const server = await startFake({
    routes,
    authenticate: apiKey === undefined ? undefined : (req) => (bearerOf(req) === apiKey ? null : { status: 401, body: { error: 'unauthorized' } }),
    notFound: () => ({ status: 404, body: '404 page not found', headers: { 'content-type': 'text/plain' } }),
  });

  return {
    baseUrl: server.origin,
    requests: server.requests,
    setModels(next) {
      models = [...next];
    },
    failNext: server.failNext,
    hangNext: server.hangNext,
    close: server.close,
  };
}
