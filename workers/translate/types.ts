import type { ProviderKind } from '../../protocol/providers.ts';
import type { SseEvent } from '../shared/sse.ts';
import type { ToolNames } from './field-limits.ts';

// Protocol translation inside the proxy worker (docs/api.md, "Translation between protocols").
//
// A Translator turns one call of the client's family into one call of the upstream's family and the answer
// back. The relay (relay.ts) uses it only for a call whose RelayRequest names a `translation`; every other
// call stays on the byte relay. The contract each translator keeps:
//
// - `request(body, ctx)`: the client's parsed JSON body -> the upstream's JSON body, with `model` already set
//   to ctx.upstreamModelId. Pure. A member that cannot be expressed upstream throws
//   ServiceError('INVALID_REQUEST', ..., { param: '<path of the member>' }) (a 400 naming it), never
//   anything else. `stream` says whether the upstream is asked to stream.
// - `response(json, ctx)`: the upstream's parsed 2xx JSON answer -> the client's JSON answer. Pure; must not
//   throw on odd shapes (missing members become empty content), since the usage is already metered.
// - `stream(ctx)`: a fresh stateful mapper for one streamed answer. `push(event)` takes each upstream SSE
//   event (comments never reach it) and returns the client's SSE text to send now ('' for none); `end()`
//   returns the text that closes the client's stream (the closing events when the upstream never sent
//   them); `closed()` says whether the client's closing event has been returned.
// - `error(status, json)`: an upstream non-2xx body (parsed JSON, or the text when it was not JSON) -> the
//   same error in the client family's vocabulary. The relay quotes it in the service's error envelope (which
//   both SDK families parse); the status follows the untranslated policy (upstream-errors.ts).
//
// Usage is never computed by a translator for the meter: the relay meters the upstream's own answer with the
// upstream op's collector, so every counter is exactly what the provider reported.
//

export interface TranslateContext {
  /** The model ID sent upstream. */
  upstreamModelId: string;
  /** The upstream's provider kind (some members are spelled per kind). */
  providerKind: ProviderKind;
  /** The model as the client named it. */
  clientModel: string;
  /** The upstream accepts `stream_options.include_usage` (GatewayAdapter.streamUsage). */
  streamUsage: boolean;
  /** Seconds since the epoch, for `created` members; injected so that transcripts are reproducible. */
  now(): number;
}

export interface TranslatedRequest {
  body: Record<string, unknown>;
  stream: boolean;
  /** What the mapper needs to know of the client's request (e.g. whether it asked for stream usage). */
  state: RequestState;
}

export interface RequestState {
  /** The client asked for usage in its stream (styleA `stream_options.include_usage`). */
  includeUsage: boolean;
  /** Tool names shortened for the upstream (field-limits.ts), mapped back in the answer. */
  toolNames?: ToolNames;
  /**
   * The types of the client's tools left out of the upstream call (a Responses request's built-in tools the
   * upstream cannot run): named to the client in the `switchyard-omitted-tools` header and in the log.
   */
  omittedTools?: readonly string[];
}

export interface StreamMapper {
  push(event: SseEvent): string;
  end(): string;
  closed(): boolean;
}

export interface Translator {
  request(body: Record<string, unknown>, ctx: TranslateContext): TranslatedRequest;
  response(json: unknown, ctx: TranslateContext, state: RequestState): unknown;
  stream(ctx: TranslateContext, state: RequestState): StreamMapper;
  error(status: number, body: unknown): unknown;
}
