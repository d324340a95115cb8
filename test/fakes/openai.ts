import { messagesRoutes } from './anthropic/messages.ts';
import { bearerOf, startFake, type Handler, type RecordedRequest, type Reply, fakeControls } from './http.ts';
import { chatRoutes } from './openai/chat.ts';
import { mediaRoutes } from './openai/media.ts';
import { responsesRoutes } from './openai/responses.ts';
import type { StyleAContext } from './openai/shared.ts';
import { embeddingsRoutes, rerankRoutes } from './openai/vectors.ts';
import { createState, type ScriptControls } from './script.ts';
import type { StreamControls } from './stream.ts';
import { keyLimits, type KeyLimit, type KeyLimits } from './openai/key-limits.ts';

export { speechBytes } from './openai/media.ts';
export {
  DEFAULT_OUTPUT,
  DEFAULT_USAGE,
  embeddingFor,
  pseudoRandomBytes,
  type FakeOutput,
  type FakeToolCall,
  type FakeUsage,
} from './script.ts';

// A styleA upstream. One server speaks four flavours of the same protocol, each with its real quirks:
// - openai: `GET /v1/models` -> `{object: "list", data: [{id, object: "model", created, owned_by}]}`;
// - openrouter: `GET /api/v1/models`, no `object`, rich entries, text-output models only unless
//   `output_modalities` asks for more; usage carries `cost`; transcriptions take JSON `input_audio` only;
// - compatible (vLLM's shape): entries add `root`, `parent`, `max_model_len`, `permission`; serves rerank;
// - llamacpp (llama-server): the server root is the base URL; `data` plus an Ollama-style `models` array;
//   serves rerank (also at the root) and Anthropic's `POST /v1/messages`.
// Every flavour serves chat, embeddings, the Responses API, images and audio under its prefix (openai/*.ts
// build them), so a test can drive any route through any kind the gateway lets it.

export type Flavour = 'openai' | 'openrouter' | 'compatible' | 'llamacpp';

export interface FakeModel {
  id: string;
  created?: number;
  ownedBy?: string;
  /** openrouter */
  name?: string;
  contextLength?: number;
  outputModalities?: string[];
  /** compatible (vLLM) */
  maxModelLen?: number;
}

export interface OpenAIFakeOptions {
  flavour?: Flavour;
  /** When set, requests must carry `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Where the styleA routes live; each flavour has its real default. */
  prefix?: string;
  /** An account of several keys, each with its own request limit (openai/key-limits.ts); replaces `apiKey`. */
  keys?: Readonly<Record<string, KeyLimit>>;
  /** llamacpp: GET /props answers with this `total_slots` (its `--parallel`); without it /props is 404. */
  slots?: number;
}

export interface OpenAIFake extends StreamControls, ScriptControls {
  /** What a provider record of this kind takes as its baseUrl. */
  baseUrl: string;
  requests: RecordedRequest[];
  /** Responses kept by the Responses API routes, by id. */
  storedResponses: ReadonlyMap<string, Record<string, unknown>>;
  setModels(models: FakeModel[]): void;
  /** With `keys`: what each key served and was refused, and its revocation. */
  keyLimits: KeyLimits | null;
  failNext(status: number, body: unknown, headers?: Record<string, string>): void;
  hangNext(): void;
  close(): Promise<void>;
}

const PREFIX: Record<Flavour, string> = { openai: '/v1', openrouter: '/api/v1', compatible: '/v1', llamacpp: '/v1' };
const CREATED = 1_700_000_000;

function openaiEntry(m: FakeModel): Record<string, unknown> {
  return { id: m.id, object: 'model', created: m.created ?? CREATED, owned_by: m.ownedBy ?? 'system' };
}

function openrouterEntry(m: FakeModel): Record<string, unknown> {
  const outputs = m.outputModalities ?? ['text'];
  return {
    id: m.id,
    canonical_slug: m.id,
    name: m.name ?? m.id,
    created: m.created ?? CREATED,
    description: '',
    context_length: m.contextLength ?? 8192,
    architecture: {
      modality: `text->${outputs.join('+')}`,
      input_modalities: ['text'],
      output_modalities: outputs,
      tokenizer: 'Other',
      instruct_type: null,
    },
    pricing: {
      prompt: '0.000001',
      completion: '0.000002',
      request: '0',
      image: '0',
      web_search: '0',
      internal_reasoning: '0',
    },
    top_provider: { context_length: m.contextLength ?? 8192, max_completion_tokens: null, is_moderated: false },
    per_request_limits: null,
    supported_parameters: ['max_tokens', 'temperature'],
  };
}

function compatibleEntry(m: FakeModel): Record<string, unknown> {
  return {
    ...openaiEntry({ ...m, ownedBy: m.ownedBy ?? 'vllm' }),
    root: m.id,
    parent: null,
    max_model_len: m.maxModelLen ?? 4096,
    permission: [],
  };
}

const LLAMACPP_META = {
  vocab_type: 2,
  n_vocab: 151936,
  n_ctx_train: 32768,
  n_embd: 1024,
  n_params: 596049920,
  size: 484220928,
};

function llamacppModelsEntry(m: FakeModel): Record<string, unknown> {
  return {
    name: m.id,
    model: m.id,
    modified_at: '',
    size: '',
    digest: '',
    type: 'model',
    description: '',
    tags: [''],
    capabilities: ['completion'],
    parameters: '',
    details: {
      parent_model: '',
      format: 'gguf',
      family: '',
      families: [''],
      parameter_size: '',
      quantization_level: '',
    },
  };
}

/** What OpenRouter lists for the `output_modalities` query: text models by default, "all" for everything. */
function openrouterSelection(models: FakeModel[], query: Record<string, string>): FakeModel[] {
  const wanted = (query.output_modalities ?? 'text').split(',');
  if (wanted.includes('all')) return models;
  return models.filter((m) => (m.outputModalities ?? ['text']).some((o) => wanted.includes(o)));
}

function listBody(flavour: Flavour, models: FakeModel[], req: RecordedRequest): Record<string, unknown> {
  switch (flavour) {
    case 'openai':
      return { object: 'list', data: models.map(openaiEntry) };
    case 'openrouter':
      return { data: openrouterSelection(models, req.query).map(openrouterEntry) };
    case 'compatible':
      return { object: 'list', data: models.map(compatibleEntry) };
    case 'llamacpp':
      return {
        models: models.map(llamacppModelsEntry),
        object: 'list',
        data: models.map((m) => ({ ...openaiEntry({ ...m, ownedBy: 'llamacpp' }), meta: LLAMACPP_META })),
      };
  }
}

/** Each server's own refusal of a missing or wrong key. */
function unauthorized(flavour: Flavour, presented: string | null): Reply {
  switch (flavour) {
    case 'openai': {
      const message =
        presented === null
          ? "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer " +
            'auth (i.e. Authorization: Bearer YOUR_KEY).'
          : `Incorrect API key provided: ${presented.slice(0, 3)}***${presented.slice(-4)}. You can find your API ` +
            `key at https://platform.openai.com/account/api-keys.`;
      return {
        status: 401,
        body: { error: { message, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } },
      };
    }
    case 'openrouter':
      return { status: 401, body: { error: { message: 'No auth credentials found', code: 401 } } };
    case 'compatible':
      return { status: 401, body: { error: 'Unauthorized' } };
    case 'llamacpp':
      return { status: 401, body: { error: { code: 401, message: 'Invalid API Key', type: 'authentication_error' } } };
  }
}

function notFound(flavour: Flavour, req: RecordedRequest): Reply {
  if (flavour === 'llamacpp')
    return { status: 404, body: { error: { code: 404, message: 'File Not Found', type: 'not_found_error' } } };
  return {
    status: 404,
    body: {
      error: {
        message: `Invalid URL (${req.method} ${req.path})`,
        type: 'invalid_request_error',
        param: null,
        code: null,
      },
    },
  };
}

/** llama-server takes its key as a Bearer token or, since it serves Anthropic's API, as `x-api-key`. */
function presentedKey(flavour: Flavour, req: RecordedRequest): string | null {
  const bearer = bearerOf(req);
  const xApiKey = req.headers['x-api-key'];
  return bearer ?? (flavour === 'llamacpp' && typeof xApiKey === 'string' ? xApiKey : null);
}

export async function start(options: OpenAIFakeOptions = {}): Promise<OpenAIFake> {
  const flavour = options.flavour ?? 'openai';
  const prefix = options.prefix ?? PREFIX[flavour];
  const state = createState();
  const ctx: StyleAContext = { dialect: flavour, state };
  let models: FakeModel[] = [];

  const list: Handler = (req) => ({ status: 200, body: listBody(flavour, models, req) });
  const responses = responsesRoutes(ctx, prefix);
  const routes: Record<string, Handler> = {
    [`GET ${prefix}/models`]: list,
    ...chatRoutes(ctx, prefix),
    ...embeddingsRoutes(ctx, prefix),
    ...responses.routes,
    ...mediaRoutes(ctx, prefix),
  };
  if (flavour === 'compatible') Object.assign(routes, rerankRoutes(ctx, [`${prefix}/rerank`, '/rerank']));
  if (flavour === 'llamacpp') {
    // llama-server answers the list at the root too, rerank under four aliases, and Anthropic's Messages API.
    routes['GET /models'] = list;
    Object.assign(
      routes,
      rerankRoutes(ctx, ['/v1/rerank', '/rerank', '/v1/reranking', '/reranking']),
      messagesRoutes({ dialect: 'llamacpp', state }),
    );
    const slots = options.slots;
    // Some of what llama-server's /props holds; `total_slots` is what the service reads.
    if (slots !== undefined)
      routes['GET /props'] = () => ({
        status: 200,
        body: {
          default_generation_settings: { n_ctx: 4096, params: { temperature: 0.8 } },
          total_slots: slots,
          model_path: '/models/qwen-local.gguf',
          chat_template: '{{ messages }}',
          modalities: { vision: false, audio: false },
          build_info: 'b6500-fake',
        },
      });
  }

  const apiKey = options.apiKey;
  const limits = options.keys === undefined ? null : keyLimits(options.keys, (req) => presentedKey(flavour, req));
  const server = await startFake({
    routes: limits === null ? routes : limits.wrap(routes),
    authenticate:
      apiKey === undefined && limits === null
        ? undefined
        : (req) => {
            const presented = presentedKey(flavour, req);
            return presented === apiKey || limits?.knows(presented) ? null : unauthorized(flavour, presented);
          },
    notFound: (req) => notFound(flavour, req),
    invalid: (message) => ({
      status: 400,
      body: { error: { message, type: 'invalid_request_error', param: null, code: null } },
    }),
  });

  return {
    ...fakeControls(server, state),
    baseUrl: flavour === 'llamacpp' ? server.origin : server.origin + prefix,
    storedResponses: responses.stored,
    keyLimits: limits,
    setModels(next) {
      models = [...next];
    },
  };
}
