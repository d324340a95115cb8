import { ServiceError } from '../../protocol/errors.ts';
import type { GatewayOp } from '../../protocol/gateway.ts';
import type { RelayRequest } from '../../protocol/relay.ts';
import { OMITTED_TOOLS_HEADER, TRANSLATIONS } from '../../protocol/translation.ts';
import { isSharedBody, sharedBodyView, type WorkerArena } from '../shared/body-arena.ts';
import type { GatewayAdapter } from './providers/types.ts';
import { createUsageCollector, type UsageResult } from './usage/collectors.ts';
import { TRANSLATORS, type RequestState, type TranslateContext, type Translator } from '../translate/index.ts';
import { omittedHeaderValue } from '../translate/responses-tools.ts';

// What the relay does differently for a translated call (protocol/translation.ts), kept out of relay.ts so the
// byte relay of every other call stays readable: the upstream request body, the whole answer and the quoted
// upstream error, each in the other protocol. Streams go through tap.ts.

export interface Translated {
  translator: Translator;
  upstreamOp: GatewayOp;
  ctx: TranslateContext;
  /** Set by translatedBody from what the translator's request step carries over to the answer. */
  state: RequestState;
}

/** The translation of a call, or null for a call relayed as it is. */
export function translatedFor(req: RelayRequest, gateway: GatewayAdapter | null): Translated | null {
  if (req.translation === undefined || gateway === null) return null;
  return {
    translator: TRANSLATORS[req.translation],
    upstreamOp: TRANSLATIONS[req.translation].upstreamOp,
    ctx: {
      upstreamModelId: req.upstreamModelId ?? '',
      clientModel: req.clientModel ?? '',
      providerKind: req.target.kind,
      streamUsage: gateway.streamUsage,
      now: () => Math.floor(Date.now() / 1000),
    },
    state: { includeUsage: false },
  };
}

/** The client's JSON body in the upstream's protocol; a member that cannot be expressed throws a 400. */
export function translatedBody(req: RelayRequest, arena: WorkerArena | undefined, translated: Translated): string {
  const { body } = req;
  let text: string;
  if (typeof body === 'string') text = body;
  else if (body instanceof ArrayBuffer) text = Buffer.from(body).toString('utf8');
  else if (isSharedBody(body) && arena) text = sharedBodyView(arena.buffer, arena.slotSize, body).toString('utf8');
  else throw new Error('a translated call without a JSON body');
  // The edge has parsed the body strictly already; a leading BOM it accepts is not JSON.parse's.
  const json: unknown = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new ServiceError('INVALID_REQUEST', 'The request body must be a JSON object.');
  let out: ReturnType<Translator['request']>;
  try {
    out = translated.translator.request(json as Record<string, unknown>, translated.ctx);
  } catch (err) {
    if (err instanceof ServiceError) throw err;
    // Translators refuse what they cannot express by name; this is the backstop for a shape none foresaw.
    throw new ServiceError('INVALID_REQUEST', 'The request cannot be translated for this model.', {
      details: { translation: true },
    });
  }
  translated.state = out.state;
  return JSON.stringify(out.body);
}

/**
 * Headers a translated answer adds to the upstream's: the tools the translation left out, by type
 * (docs/api.md, `switchyard-omitted-tools`), on a streamed answer's head and a whole one alike.
 */
export function translatedHeaders(translated: Translated): Record<string, string> {
  const omitted = translated.state.omittedTools;
  return omitted === undefined || omitted.length === 0 ? {} : { [OMITTED_TOOLS_HEADER]: omittedHeaderValue(omitted) };
}

/** A whole upstream answer: metered as the upstream's protocol, answered in the client's. */
export function translatedWhole(
  whole: Buffer,
  translated: Translated,
  req: RelayRequest,
): { body: string; usage: UsageResult } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(whole.toString('utf8'));
  } catch {
    throw new ServiceError('UPSTREAM_ERROR', 'The provider answered with malformed JSON.', {
      details: { providerId: req.target.id },
    });
  }
  const collector = createUsageCollector(translated.upstreamOp, { providerKind: req.target.kind });
  collector.json(parsed);
  let body: string;
  try {
    body = JSON.stringify(translated.translator.response(parsed, translated.ctx, translated.state));
  } catch {
    // Translators read leniently; this is the backstop for an answer shaped like nothing they expect.
    throw new ServiceError('UPSTREAM_ERROR', 'The provider answered in a shape that cannot be translated.', {
      details: { providerId: req.target.id },
    });
  }
  return { body, usage: collector.result() };
}

/** The provider's error text, quoted in the client's protocol vocabulary. */
export function translatedErrorText(translated: Translated, status: number, text: string): string {
  if (text === '') return text;
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // quoted as text, in the client's shape
  }
  return JSON.stringify(translated.translator.error(status, parsed));
}
