import { ServiceError } from '../../protocol/errors.ts';
import { usageOf } from './generate.ts';
import type { LoadedModel } from './models.ts';
import type { CallOutput } from './output.ts';

// styleA embeddings on a loaded model. The official client asks for `base64` by default: the vector as
// little-endian float32 bytes, which is also the smaller answer.

const MAX_INPUTS = 2048;

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

export interface EmbeddingsRequest {
  inputs: string[];
  base64: boolean;
}

export function parseEmbeddingsRequest(body: Record<string, unknown>): EmbeddingsRequest {
  const input = body.input;
  const inputs = typeof input === 'string' ? [input] : input;
  if (
    !Array.isArray(inputs) ||
    inputs.length === 0 ||
    inputs.length > MAX_INPUTS ||
    inputs.some((s) => typeof s !== 'string' || s === '')
  ) {
    throw invalid(
      'input',
      `\`input\` is a non-empty string or an array of 1 to ${MAX_INPUTS} non-empty strings (token arrays are not ` +
        `supported here).`,
    );
  }
  const format = body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64')
    throw invalid('encoding_format', '`encoding_format` is `float` or `base64`.');
  if (body.dimensions !== undefined && body.dimensions !== null) {
    throw invalid('dimensions', "The embedded runtime returns the model's own dimensions; omit `dimensions`.");
  }
  return { inputs: inputs as string[], base64: format === 'base64' };
}

export async function embeddings(
  model: LoadedModel,
  clientModel: string,
  req: EmbeddingsRequest,
  out: CallOutput,
): Promise<void> {
  let promptTokens = 0;
  const data = await model.embed(async (context) => {
    const rows = [];
    for (const [index, text] of req.inputs.entries()) {
      promptTokens += model.model.tokenize(text).length;
      const { vector } = await context.getEmbeddingFor(text);
      const embedding = req.base64 ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : [...vector];
      rows.push({ object: 'embedding', index, embedding });
    }
    return rows;
  });
  const usage = usageOf(promptTokens, 0);
  out.whole(
    200,
    { object: 'list', data, model: clientModel, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } },
    { ...usage, outputTokens: null },
  );
}
