import type { Handler, Reply } from '../http.ts';
import { bodyOf, isObject, nowSeconds, plannedCalls, stringField, type JsonObject } from '../script.ts';
import { responseEvents, responseStreamError } from './responses-events.ts';
import { answerHeaders, responsesToolNames, responsesUsage, styleAError, type StyleAContext } from './shared.ts';

// OpenAI's Responses API: create (plain or streamed), retrieve, delete, input items, cancel, input token
// counts and compaction. Created responses are kept per fake, as OpenAI keeps them unless `store: false`;
// a `background: true` response stays `in_progress` until cancelled, which is all a relay test needs of it.

interface Stored {
  response: JsonObject;
  inputItems: JsonObject[];
}

export interface ResponsesRoutes {
  routes: Record<string, Handler>;
  /** POST /responses alone, for a server whose Responses layer is stateless (Ollama). */
  create: Handler;
  /** Stored responses by id, as retrieve answers them. */
  stored: ReadonlyMap<string, JsonObject>;
}

/** The request's `input` as the items input_items lists: each with an id, text as `input_text` parts. */
function inputItems(ctx: StyleAContext, input: unknown): JsonObject[] {
  const asText = (role: unknown, text: string): JsonObject => ({
    type: role === 'assistant' ? 'output_text' : 'input_text',
    text,
  });
  if (typeof input === 'string') {
    return [
      {
        id: ctx.state.nextId('msg_'),
        type: 'message',
        role: 'user',
        status: 'completed',
        content: [asText('user', input)],
      },
    ];
  }
  if (!Array.isArray(input)) return [];
  return input.filter(isObject).map((item): JsonObject => {
    const id = typeof item.id === 'string' ? item.id : ctx.state.nextId(item.role === undefined ? 'item_' : 'msg_');
    if (item.role === undefined) return { ...item, id };
    const content = typeof item.content === 'string' ? [asText(item.role, item.content)] : item.content;
    return { type: 'message', status: 'completed', ...item, id, content };
  });
}

function outputItems(ctx: StyleAContext, body: JsonObject): JsonObject[] {
  const text = ctx.state.output.text;
  const message: JsonObject = {
    id: ctx.state.nextId('msg_'),
    type: 'message',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
  };
  const calls = plannedCalls(ctx.state.output, responsesToolNames(body.tools), body.tool_choice).map((call) => ({
    id: ctx.state.nextId('fc_'),
    type: 'function_call',
    status: 'completed',
    call_id: ctx.state.nextId('call_'),
    name: call.name,
    arguments: JSON.stringify(call.arguments),
  }));
  return [message, ...calls];
}

function responseObject(ctx: StyleAContext, body: JsonObject, model: string): JsonObject {
  const background = body.background === true;
  const created = nowSeconds();
  return {
    id: ctx.state.nextId('resp_'),
    object: 'response',
    created_at: created,
    status: background ? 'in_progress' : 'completed',
    background,
    completed_at: background ? null : created,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model,
    output: background ? [] : outputItems(ctx, body),
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: null, summary: null },
    store: body.store !== false,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: Array.isArray(body.tools) ? body.tools : [],
    top_p: body.top_p ?? 1,
    truncation: 'disabled',
    usage: background ? null : responsesUsage(ctx),
    user: null,
    metadata: isObject(body.metadata) ? body.metadata : {},
  };
}

/** Input items paged as OpenAI pages them: newest first by default, `after` an item id, `limit` 1..100. */
function itemsPage(items: JsonObject[], query: Record<string, string>): JsonObject | null {
  const ordered = query.order === 'asc' ? items : [...items].reverse();
  const limit = query.limit === undefined ? 20 : Number(query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) return null;
  const start = query.after === undefined ? 0 : ordered.findIndex((i) => i.id === query.after) + 1;
  const data = ordered.slice(start, start + limit);
  return {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: start + limit < ordered.length,
  };
}

export function responsesRoutes(ctx: StyleAContext, prefix: string): ResponsesRoutes {
  const store = new Map<string, Stored>();
  const stored = new Map<string, JsonObject>();
  const missing = (id: string): Reply => styleAError(ctx, 404, `Response with id '${id}' not found.`);
  const keep = (response: JsonObject, items: JsonObject[]): void => {
    if (response.store === false) return;
    store.set(String(response.id), { response, inputItems: items });
    stored.set(String(response.id), response);
  };

  const create: Handler = (req) => {
    const body = bodyOf(req.json);
    const model = stringField(body, 'model');
    if (model === undefined) return styleAError(ctx, 400, "Missing required parameter: 'model'.", 'model');
    const response = responseObject(ctx, body, model);
    keep(response, inputItems(ctx, body.input));
    if (body.stream !== true) return { status: 200, body: response, headers: answerHeaders(ctx) };
    const plan = {
      final: response,
      textChunks: ctx.state.output.chunks,
      argumentChunks: ctx.state.output.argumentChunks,
    };
    return { status: 200, events: responseEvents(plan), errorEvent: responseStreamError, headers: answerHeaders(ctx) };
  };

  const routes: Record<string, Handler> = {
    [`POST ${prefix}/responses`]: create,
    [`GET ${prefix}/responses/:id`]: (_req, { id = '' }) => {
      const entry = store.get(id);
      return entry === undefined ? missing(id) : { status: 200, body: entry.response };
    },
    [`DELETE ${prefix}/responses/:id`]: (_req, { id = '' }) => {
      if (!store.delete(id)) return missing(id);
      stored.delete(id);
      return { status: 200, body: { id, object: 'response.deleted', deleted: true } };
    },
    [`GET ${prefix}/responses/:id/input_items`]: (req, { id = '' }) => {
      const entry = store.get(id);
      if (entry === undefined) return missing(id);
      const page = itemsPage(entry.inputItems, req.query);
      return page === null
        ? styleAError(ctx, 400, 'limit must be an integer between 1 and 100', 'limit')
        : { status: 200, body: page };
    },
    [`POST ${prefix}/responses/:id/cancel`]: (_req, { id = '' }) => {
      const entry = store.get(id);
      if (entry === undefined) return missing(id);
      if (entry.response.background !== true)
        return styleAError(ctx, 400, 'Only responses created with background=true can be cancelled.');
      entry.response.status = 'cancelled';
      return { status: 200, body: entry.response };
    },
    [`POST ${prefix}/responses/input_tokens`]: () => ({
      status: 200,
      body: { object: 'response.input_tokens', input_tokens: ctx.state.usage.inputTokens },
    }),
    [`POST ${prefix}/responses/compact`]: (req) => {
      const body = bodyOf(req.json);
      if (stringField(body, 'model') === undefined)
        return styleAError(ctx, 400, "Missing required parameter: 'model'.", 'model');
      // What compact returns: the user's messages kept as they were, then one opaque compaction item.
      const kept = inputItems(ctx, body.input).filter((i) => i.type === 'message' && i.role === 'user');
      const compaction = {
        id: ctx.state.nextId('cmp_'),
        type: 'compaction',
        encrypted_content: Buffer.from('fake compaction').toString('base64'),
      };
      return {
        status: 200,
        body: {
          id: ctx.state.nextId('resp_'),
          object: 'response.compaction',
          created_at: nowSeconds(),
          output: [...kept, compaction],
          usage: responsesUsage(ctx),
        },
      };
    },
  };
  return { routes, create, stored };
}
