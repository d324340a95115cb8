// Endpoint families (docs/api.md) and the operation-level routes each one covers. The gateway's
// route table, the capabilities document and the catalog's validation all read this one table.

export const FAMILIES = [
  'styleA.chat_completions',
  'styleA.embeddings',
  'styleA.responses',
  'styleA.images',
  'styleA.audio_speech',
  'styleA.audio_transcriptions',
  'styleB.messages',
  'rerank.documents',
] as const;
export type EndpointFamily = (typeof FAMILIES)[number];

export function isFamily(value: unknown): value is EndpointFamily {
  return typeof value === 'string' && (FAMILIES as readonly string[]).includes(value);
}

export interface Operation {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  /** How the model is named: in a JSON body, a multipart field, or not at all (addressed by response ID). */
  model: 'json' | 'multipart' | 'none';
}

export const FAMILY_OPERATIONS = {
  'styleA.chat_completions': [{ method: 'POST', path: '/v1/chat/completions', model: 'json' }],
  'styleA.embeddings': [{ method: 'POST', path: '/v1/embeddings', model: 'json' }],
  'styleA.responses': [
    { method: 'POST', path: '/v1/responses', model: 'json' },
    { method: 'POST', path: '/v1/responses/input_tokens', model: 'json' },
    { method: 'POST', path: '/v1/responses/compact', model: 'json' },
    { method: 'GET', path: '/v1/responses/{id}', model: 'none' },
    { method: 'DELETE', path: '/v1/responses/{id}', model: 'none' },
    { method: 'GET', path: '/v1/responses/{id}/input_items', model: 'none' },
    { method: 'POST', path: '/v1/responses/{id}/cancel', model: 'none' },
  ],
  'styleA.images': [
    { method: 'POST', path: '/v1/images/generations', model: 'json' },
    { method: 'POST', path: '/v1/images/edits', model: 'multipart' },
  ],
  'styleA.audio_speech': [{ method: 'POST', path: '/v1/audio/speech', model: 'json' }],
  'styleA.audio_transcriptions': [{ method: 'POST', path: '/v1/audio/transcriptions', model: 'multipart' }],
  'styleB.messages': [
    { method: 'POST', path: '/v1/messages', model: 'json' },
    { method: 'POST', path: '/v1/messages/count_tokens', model: 'json' },
  ],
  'rerank.documents': [{ method: 'POST', path: '/v1/rerank', model: 'json' }],
} as const satisfies Record<EndpointFamily, readonly Operation[]>;

/** Families that generate text: the ones presets may share and route packs may guarantee. */
export const GENERATION_FAMILIES: readonly EndpointFamily[] = [
  'styleA.chat_completions',
  'styleA.responses',
  'styleB.messages',
];
