import type { Handler } from '../http.ts';
import { bodyOf, embeddingFor, float32Base64, isObject, sha256Hex, stringField, type JsonObject } from '../script.ts';
import { answerHeaders, styleAError, type StyleAContext } from './shared.ts';

// POST /embeddings (OpenAI's list of `embedding` objects; base64 of little-endian float32s when asked, which
// the openai SDK does by default) and POST /rerank (vLLM's and llama-server's Cohere-style answer).

/** The texts an embeddings `input` names: a string, strings, or token arrays (embedded by their JSON). */
function inputsOf(input: unknown): string[] | null {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input) || input.length === 0) return null;
  if (input.every((i) => typeof i === 'number')) return [JSON.stringify(input)];
  if (input.every((i) => typeof i === 'string')) return input as string[];
  if (input.every((i) => Array.isArray(i))) return input.map((i) => JSON.stringify(i));
  return null;
}

export interface EmbeddingsOptions {
  /** Old Ollama ignored `encoding_format` and always answered floats; false models that server. */
  base64: boolean;
}

export function embeddingsRoutes(
  ctx: StyleAContext,
  prefix: string,
  options: EmbeddingsOptions = { base64: true },
): Record<string, Handler> {
  const create: Handler = (req) => {
    const body = bodyOf(req.json);
    const model = stringField(body, 'model');
    if (model === undefined) return styleAError(ctx, 400, 'you must provide a model parameter', 'model');
    const texts = inputsOf(body.input);
    if (texts === null)
      return styleAError(ctx, 400, "'input' : input must be a string or an array of strings", 'input');
    const dimensions = typeof body.dimensions === 'number' ? body.dimensions : ctx.state.output.embeddingDimensions;
    const base64 = options.base64 && body.encoding_format === 'base64';
    const data = texts.map((text, index) => {
      const vector = embeddingFor(text, dimensions);
      return { object: 'embedding', index, embedding: base64 ? float32Base64(vector) : vector };
    });
    const tokens = ctx.state.usage.inputTokens;
    return {
      status: 200,
      body: { object: 'list', data, model, usage: { prompt_tokens: tokens, total_tokens: tokens } },
      headers: answerHeaders(ctx),
    };
  };
  return { [`POST ${prefix}/embeddings`]: create };
}

function documentText(doc: unknown): string | null {
  if (typeof doc === 'string') return doc;
  return isObject(doc) && typeof doc.text === 'string' ? doc.text : null;
}

/** A stable score in (0, 1): the share of query words the document contains, nudged by a hash to break ties. */
function relevance(query: string, text: string): number {
  const words = query.toLowerCase().split(/\W+/).filter(Boolean);
  const lower = text.toLowerCase();
  const hits = words.filter((w) => lower.includes(w)).length;
  const jitter = parseInt(sha256Hex(`${query}\n${text}`).slice(0, 6), 16) / 0xffffff / 100;
  return Math.round(((hits + 0.5) / (words.length + 1) - jitter) * 1e6) / 1e6;
}

/**
 * vLLM answers `{id, model, usage: {total_tokens}, results: [{index, document: {text}, relevance_score}]}`;
 * llama-server adds `object: "list"` and `usage.prompt_tokens`, and returns the text only with `return_text`.
 * Both sort by score, highest first, and honour `top_n`.
 */
export function rerankRoutes(ctx: StyleAContext, paths: string[]): Record<string, Handler> {
  const rerank: Handler = (req) => {
    const body = bodyOf(req.json);
    const query = stringField(body, 'query');
    const docs = Array.isArray(body.documents) ? body.documents.map(documentText) : null;
    if (query === undefined) return styleAError(ctx, 400, '"query" must be provided', 'query');
    if (docs === null || docs.length === 0 || docs.some((d) => d === null)) {
      return styleAError(ctx, 400, '"documents" must be a non-empty array of strings', 'documents');
    }
    const texts = docs as string[];
    const withText = ctx.dialect === 'llamacpp' ? body.return_text === true : body.return_documents !== false;
    const ranked = texts
      .map((text, index) => ({ index, text, score: relevance(query, text) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, typeof body.top_n === 'number' ? body.top_n : texts.length);
    const results = ranked.map(
      (r): JsonObject => ({
        index: r.index,
        relevance_score: r.score,
        ...(withText ? { document: { text: r.text } } : {}),
      }),
    );
    const tokens = ctx.state.usage.inputTokens;
    const answer: JsonObject = {
      id: ctx.state.nextId('rerank-'),
      model: stringField(body, 'model') ?? 'reranker',
      results,
    };
    if (ctx.dialect === 'llamacpp')
      Object.assign(answer, { object: 'list', usage: { prompt_tokens: tokens, total_tokens: tokens } });
    else answer.usage = { total_tokens: tokens };
    return { status: 200, body: answer };
  };
  return Object.fromEntries(paths.map((path) => [`POST ${path}`, rerank]));
}
