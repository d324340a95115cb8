import type { Handler, RecordedRequest, Reply } from '../http.ts';
import type { PartSummary } from '../multipart.ts';
import { bodyOf, isObject, nowSeconds, pseudoRandomBytes, stringField, type JsonObject } from '../script.ts';
import { answerHeaders, styleAError, type StyleAContext } from './shared.ts';

// Images (generations as JSON, edits as multipart), speech (binary audio) and transcriptions (multipart, or
// OpenRouter's JSON `input_audio`). Uploads are never held: the recorded request keeps only part summaries.

/** A 1x1 transparent PNG: small, and a real image for a client that decodes it. */
const PNG_1X1 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

/** The bytes the speech route answers for `input`: a test computes the same to compare byte for byte. */
export function speechBytes(input: string, size: number): Buffer {
  return pseudoRandomBytes(`speech:${input}`, size);
}

const SPEECH_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

function fieldsOf(parts: PartSummary[]): Record<string, string> {
  return Object.fromEntries(parts.flatMap((p) => (p.value === null ? [] : [[p.name, p.value]])));
}

function imagesAnswer(ctx: StyleAContext, model: string, count: number, format: string | undefined): JsonObject {
  const u = ctx.state.usage;
  if (!model.startsWith('gpt-image')) {
    // DALL-E answers URLs unless asked for b64_json, and reports no usage.
    const data = Array.from({ length: count }, (_, i) =>
      format === 'b64_json'
        ? { b64_json: PNG_1X1, revised_prompt: null }
        : { url: `https://images.fake.invalid/${i}.png` },
    );
    return { created: nowSeconds(), data };
  }
  return {
    created: nowSeconds(),
    background: 'opaque',
    data: Array.from({ length: count }, () => ({ b64_json: PNG_1X1 })),
    output_format: 'png',
    quality: 'medium',
    size: '1024x1024',
    usage: {
      input_tokens: u.inputTokens,
      input_tokens_details: { text_tokens: u.inputTokens, image_tokens: 0 },
      output_tokens: u.outputTokens,
      total_tokens: u.inputTokens + u.outputTokens,
    },
  };
}

function countOf(value: unknown): number {
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : 1;
}

function transcriptionUsage(ctx: StyleAContext, model: string): JsonObject | null {
  const u = ctx.state.usage;
  const tokens = {
    type: 'tokens',
    input_tokens: u.inputTokens,
    input_token_details: { text_tokens: 0, audio_tokens: u.inputTokens },
    output_tokens: u.outputTokens,
    total_tokens: u.inputTokens + u.outputTokens,
  };
  if (ctx.dialect === 'openrouter') return { ...tokens, cost: u.costUsd };
  // Token-billed transcription models (gpt-4o-transcribe and kin) report usage; whisper does not.
  return /transcribe/.test(model) ? tokens : null;
}

function transcriptionAnswer(ctx: StyleAContext, model: string, format: string | undefined): Reply {
  const text = ctx.state.output.transcript;
  if (format === 'text' || format === 'srt' || format === 'vtt') {
    return { status: 200, body: `${text}\n`, headers: { 'content-type': 'text/plain; charset=utf-8' } };
  }
  const usage = transcriptionUsage(ctx, model);
  const base: JsonObject =
    format === 'verbose_json'
      ? { task: 'transcribe', language: 'english', duration: 1.5, text, segments: [] }
      : { text };
  return { status: 200, body: usage === null ? base : { ...base, usage }, headers: answerHeaders(ctx) };
}

function transcribe(ctx: StyleAContext, req: RecordedRequest): Reply {
  if (ctx.dialect === 'openrouter') {
    // OpenRouter takes JSON with base64 audio, never multipart.
    const body = bodyOf(req.json);
    const audio = bodyOf(body.input_audio);
    const model = stringField(body, 'model');
    if (model === undefined) return styleAError(ctx, 400, 'model is required', 'model');
    if (typeof audio.data !== 'string' || typeof audio.format !== 'string') {
      return styleAError(ctx, 400, 'input_audio.data and input_audio.format are required', 'input_audio');
    }
    return transcriptionAnswer(ctx, model, 'json');
  }
  if (req.parts === null) return styleAError(ctx, 400, 'Could not parse multipart form');
  const fields = fieldsOf(req.parts);
  const model = fields.model;
  if (model === undefined) return styleAError(ctx, 400, 'you must provide a model parameter', 'model');
  if (!req.parts.some((p) => p.name === 'file' && p.filename !== null))
    return styleAError(ctx, 400, "Missing required parameter: 'file'.", 'file');
  return transcriptionAnswer(ctx, model, fields.response_format);
}

export function mediaRoutes(ctx: StyleAContext, prefix: string): Record<string, Handler> {
  return {
    [`POST ${prefix}/images/generations`]: (req) => {
      const body = bodyOf(req.json);
      if (stringField(body, 'prompt') === undefined)
        return styleAError(ctx, 400, "Missing required parameter: 'prompt'.", 'prompt');
      const model = stringField(body, 'model') ?? 'dall-e-2';
      return {
        status: 200,
        body: imagesAnswer(ctx, model, countOf(body.n), stringField(body, 'response_format')),
        headers: answerHeaders(ctx),
      };
    },
    [`POST ${prefix}/images/edits`]: (req) => {
      if (req.parts === null) return styleAError(ctx, 400, 'Could not parse multipart form');
      const fields = fieldsOf(req.parts);
      if (fields.prompt === undefined) return styleAError(ctx, 400, "Missing required parameter: 'prompt'.", 'prompt');
      // The SDK sends one image as `image`, several as `image[]`.
      if (!req.parts.some((p) => (p.name === 'image' || p.name === 'image[]') && p.filename !== null)) {
        return styleAError(ctx, 400, "Missing required parameter: 'image'.", 'image');
      }
      const model = fields.model ?? 'dall-e-2';
      return {
        status: 200,
        body: imagesAnswer(ctx, model, countOf(fields.n), fields.response_format),
        headers: answerHeaders(ctx),
      };
    },
    [`POST ${prefix}/audio/speech`]: (req) => {
      const body = bodyOf(req.json);
      const input = stringField(body, 'input');
      if (input === undefined) return styleAError(ctx, 400, "Missing required parameter: 'input'.", 'input');
      if (stringField(body, 'voice') === undefined && !isObject(body.voice))
        return styleAError(ctx, 400, "Missing required parameter: 'voice'.", 'voice');
      const type = SPEECH_TYPES[stringField(body, 'response_format') ?? 'mp3'] ?? 'audio/mpeg';
      return {
        status: 200,
        bytes: speechBytes(input, ctx.state.output.speechBytes),
        headers: { 'content-type': type, ...answerHeaders(ctx) },
      };
    },
    [`POST ${prefix}/audio/transcriptions`]: (req) => transcribe(ctx, req),
  };
}
