import type { EndpointFamily } from './families.ts';
import type { GatewayOp } from './gateway.ts';

// Which protocol translations exist: a call in the client family may reach a model that lists only the
// upstream family. The edge reads this table (resolution, model records, /v1/capabilities); the proxy worker
// holds one translator per row (workers/translate/index.ts, typed against this table).

export const TRANSLATIONS = {
  'styleB.messages<-styleA.chat_completions': {
    client: 'styleB.messages',
    upstream: 'styleA.chat_completions',
    clientOp: 'messages',
    upstreamOp: 'chat.completions',
  },
  'styleA.chat_completions<-styleB.messages': {
    client: 'styleA.chat_completions',
    upstream: 'styleB.messages',
    clientOp: 'chat.completions',
    upstreamOp: 'messages',
  },
  'styleA.responses<-styleA.chat_completions': {
    client: 'styleA.responses',
    upstream: 'styleA.chat_completions',
    clientOp: 'responses.create',
    upstreamOp: 'chat.completions',
  },
  // After the chat row: a model listing both families (llama-server's) stays served over chat, the closer protocol.
  'styleA.responses<-styleB.messages': {
    client: 'styleA.responses',
    upstream: 'styleB.messages',
    clientOp: 'responses.create',
    upstreamOp: 'messages',
  },
} as const satisfies Record<
  string,
  { client: EndpointFamily; upstream: EndpointFamily; clientOp: GatewayOp; upstreamOp: GatewayOp }
>;

export type TranslationKey = keyof typeof TRANSLATIONS;

/**
 * The answer header that names the client's tools a translation left out of the upstream call (built-in
 * tools the upstream cannot run), comma-separated; never a reason to refuse the call.
 */
export const OMITTED_TOOLS_HEADER = 'switchyard-omitted-tools';

export interface TranslationRoute {
  key: TranslationKey;
  /** The operation the upstream is called with (its URL and its usage collector). */
  upstreamOp: GatewayOp;
}

/**
 * The translation that lets a call of `op` reach a model listing `families`, or null when the model speaks
 * the op's family itself (no translation) or none reaches it. The first row that fits wins.
 */
export function translationFor(op: GatewayOp, families: readonly string[]): TranslationRoute | null {
  for (const key of Object.keys(TRANSLATIONS) as TranslationKey[]) {
    const row = TRANSLATIONS[key];
    if (row.clientOp === op && families.includes(row.upstream)) return { key, upstreamOp: row.upstreamOp };
  }
  return null;
}

/** The families a model with `families` is also reachable through, by translation (not listed natively). */
export function translatedFamilies(families: readonly string[]): EndpointFamily[] {
  const out: EndpointFamily[] = [];
  for (const row of Object.values(TRANSLATIONS)) {
    if (families.includes(row.upstream) && !families.includes(row.client) && !out.includes(row.client))
      out.push(row.client);
  }
  return out;
}
