import type { EndpointFamily } from '../../../../protocol/families.ts';
import { styleAModel, type StyleAEntry, type StyleAModelsOptions } from '../openai-base/index.ts';
import { countOrNull, stringOrNull } from '../shape.ts';
import { isRecord } from '../../../shared/shape.ts';

/**
 * What a model produces, from `architecture.output_modalities`; entries from before that field carry only
 * `architecture.modality` ("text+image->text"), and entries with neither are treated as text models.
 */
function outputModalities(entry: StyleAEntry): string[] {
  const arch = isRecord(entry.architecture) ? entry.architecture : {};
  if (Array.isArray(arch.output_modalities))
    return arch.output_modalities.filter((m): m is string => typeof m === 'string');
  if (typeof arch.modality === 'string' && arch.modality.includes('->'))
    return arch.modality.split('->')[1]?.split('+') ?? [];
  return ['text'];
}

/**
 * OpenRouter states each model's output modalities: embedding models serve embeddings only; models with text
 * output serve Chat Completions and Responses (OpenRouter answers both for every text model); models with
 * neither (image- or audio-only output) serve no family we route.
 */
export function openrouterFamilies(outputs: readonly string[]): EndpointFamily[] {
  if (outputs.includes('embeddings')) return ['styleA.embeddings'];
  if (outputs.includes('text')) return ['styleA.chat_completions', 'styleA.responses'];
  return [];
}

export const openrouterModels: StyleAModelsOptions = {
  // Without the filter OpenRouter lists text-output models only, and its embedding models would never appear.
  query: { output_modalities: 'text,embeddings' },
  toModel: (entry) => ({
    ...styleAModel(entry, openrouterFamilies(outputModalities(entry))),
    displayName: stringOrNull(entry.name),
    contextWindow: countOrNull(entry.context_length),
  }),
};
