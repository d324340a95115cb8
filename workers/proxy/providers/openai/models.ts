import type { EndpointFamily } from '../../../../protocol/families.ts';
import { styleAModel, type StyleAModelsOptions } from '../openai-base/index.ts';
import { idHas } from '../shape.ts';

const CHAT_AND_RESPONSES: EndpointFamily[] = ['styleA.chat_completions', 'styleA.responses'];

/**
 * OpenAI's list says nothing about what a model serves, so the families come from its ID, first match wins.
 * Rules beyond the obvious ones follow OpenAI's model pages:
 * - moderation, realtime (WebSocket only), sora (video), the legacy completions models (babbage, davinci,
 *   `-instruct`): no family we route;
 * - codex, deep-research, computer-use and the `-pro` reasoning models: Responses only;
 * - the audio and search previews of chat: Chat Completions only.
 */
export function openaiFamilies(id: string): EndpointFamily[] {
  if (idHas(id, 'moderation', 'realtime', 'sora', 'babbage', 'davinci', '-instruct')) return [];
  if (idHas(id, 'embedding')) return ['styleA.embeddings'];
  if (idHas(id, 'gpt-image', 'dall-e')) return ['styleA.images'];
  if (idHas(id, 'tts')) return ['styleA.audio_speech'];
  if (idHas(id, 'whisper', 'transcribe')) return ['styleA.audio_transcriptions'];
  if (idHas(id, 'codex', 'deep-research', 'computer-use') || /-pro(?:-|$)/i.test(id)) return ['styleA.responses'];
  if (idHas(id, 'gpt-audio', 'audio-preview', 'search-preview')) return ['styleA.chat_completions'];
  return [...CHAT_AND_RESPONSES];
}

export const openaiModels: StyleAModelsOptions = {
  toModel: (entry) => styleAModel(entry, openaiFamilies(entry.id)),
};
