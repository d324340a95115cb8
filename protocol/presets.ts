import type { EndpointFamily } from './families.ts';

// Which request parameters a preset may set, per endpoint family: the names each protocol documents for
// sampling and output control. Nothing that names a model, carries content or changes the protocol.
export const PRESET_PARAMETERS = {
  'styleA.chat_completions': [
    'temperature',
    'top_p',
    'max_tokens',
    'max_completion_tokens',
    'presence_penalty',
    'frequency_penalty',
    'stop',
    'seed',
    'response_format',
    'reasoning_effort',
    'tool_choice',
    'parallel_tool_calls',
    'logit_bias',
    'n',
  ],
  'styleA.responses': [
    'temperature',
    'top_p',
    'max_output_tokens',
    'instructions',
    'reasoning',
    'text',
    'tool_choice',
    'parallel_tool_calls',
    'truncation',
  ],
  'styleB.messages': ['temperature', 'top_p', 'top_k', 'max_tokens', 'stop_sequences', 'thinking', 'tool_choice'],
  'styleA.embeddings': ['dimensions', 'encoding_format'],
  'styleA.images': ['size', 'quality', 'n', 'background', 'output_format', 'style'],
  'styleA.audio_speech': ['voice', 'response_format', 'speed', 'instructions'],
  'styleA.audio_transcriptions': ['language', 'temperature', 'response_format', 'prompt'],
  'rerank.documents': ['top_n', 'return_documents'],
} as const satisfies Record<EndpointFamily, readonly string[]>;

/**
 * A preset's familyScope must lie inside one of these groups: a generation preset may serve the styleA
 * chat and responses routes and styleB messages alike (its system prompt maps onto each), but a preset
 * for embeddings cannot also serve chat.
 */
export const PRESET_SCOPE_GROUPS = [
  { id: 'generation', families: ['styleA.chat_completions', 'styleA.responses', 'styleB.messages'] },
  { id: 'embeddings', families: ['styleA.embeddings'] },
  { id: 'images', families: ['styleA.images'] },
  { id: 'speech', families: ['styleA.audio_speech'] },
  { id: 'transcription', families: ['styleA.audio_transcriptions'] },
  { id: 'rerank', families: ['rerank.documents'] },
] as const satisfies readonly { id: string; families: readonly EndpointFamily[] }[];

/** Families where a preset `system` prompt applies. */
export const PRESET_SYSTEM_FAMILIES: readonly EndpointFamily[] = [
  'styleA.chat_completions',
  'styleA.responses',
  'styleB.messages',
];

/** Parameter names a preset may set for `family` (the protocol's own names for sampling and output control). */
export function parametersFor(family: EndpointFamily): readonly string[] {
  return PRESET_PARAMETERS[family];
}
