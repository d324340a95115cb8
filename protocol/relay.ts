import type { ErrorPayload } from './errors.ts';
import type { GatewayOp, UsageAcceleration, UsageReport } from './gateway.ts';
import type { ProviderTarget } from './messages.ts';
import type { TranslationKey } from './translation.ts';

// The relay protocol between the edge and the proxy workers. Each worker has one long-lived port;
// requests are multiplexed on it by `id`. Each side posts the messages of an event-loop turn as one batch:
// as JSON text with its text bodies beside it (relay-batch.ts) when neither buffers nor stream chunks travel
// with it (V8's structured clone costs two to four times JSON's for these small objects), else
// structured-cloned (a chunk string is copied as it is, where JSON would escape every quote in it) with its
// buffers transferred. Every message is therefore plain JSON data apart from its ArrayBuffers, and every
// ArrayBuffer in a batch is in its transfer list.

export interface RelayRequest {
  op: GatewayOp;
  target: ProviderTarget;
  /** The vault reference of the key the call uses; null for a provider without one. */
  credentialRef: string | null;
  /** That key's credential ID (protocol/catalog.ts CredentialRecord), for usage, limits and the key pool. */
  credentialId: string | null;
  requestId: string;
  /** The model as the client named it (rerank answers with it) and as the upstream knows it. */
  clientModel: string | null;
  upstreamModelId: string | null;
  params: Record<string, string>;
  query: string;
  /** Client headers that passed the edge's allow-list (protocol headers and this kind's hints). */
  headers: Record<string, string>;
  /**
   * The whole JSON body: a small one as its text (cloning a short string costs less than transferring a
   * buffer), a large one in a slot of the shared body arena (workers/shared/body-arena.ts) or, when no slot
   * was free, as bytes, transferred; null when the body follows in `body` messages (uploads).
   */
  body: ArrayBuffer | string | SharedBodyRef | null;
  bodyStreamed: boolean;
  /** Set when the model is reached through a protocol translation (protocol/translation.ts): `op` is the client's. */
  translation?: TranslationKey;
  /** Calls to the embedded runtime: the agent session the call names, bounded (edge/gateway/affinity-session.ts). */
  session?: string | null;
}

/** A body in a slot of the shared body arena: its bytes start at the slot's start. The worker frees the slot. */
export interface SharedBodyRef {
  shared: number;
  length: number;
}

export type ToWorker =
  | { t: 'start'; id: number; req: RelayRequest }
  /** A streamed upload's next chunk; `chunk: null` ends it. */
  | { t: 'body'; id: number; chunk: ArrayBuffer | null }
  | { t: 'pause'; id: number }
  | { t: 'resume'; id: number }
  /** A stream's bytes the edge has written to its client: the worker may read that much more (STREAM_WINDOW). */
  | { t: 'credit'; id: number; bytes: number }
  | { t: 'abort'; id: number };

export interface RelayEnd {
  usage: UsageReport | null;
  /** The ID of a created styleA response, so later calls that name it reach the same provider. */
  responseId: string | null;
  /** How a local runtime generated the answer (the embedded runtime reports it); absent for upstream calls. */
  acceleration?: UsageAcceleration;
}

/**
 * Stream bytes: a small chunk as a latin1 string (one character per byte, so any bytes survive, also a
 * character cut in two by the upstream's framing), which clones for less than a buffer transfers; a large
 * one as an ArrayBuffer, transferred.
 */
export type Chunk = ArrayBuffer | string;

/**
 * A stream's bytes a relay worker may have posted and the edge not yet written to the client. Beyond it the
 * worker stops reading the upstream until the edge's credits bring it back under half. The edge's own pause
 * (a full client socket) works only once the edge has taken the messages; this bounds what a busy edge
 * thread can have queued behind them.
 */
export const STREAM_WINDOW = 4 * 1024 * 1024;
/** The edge credits written stream bytes in steps of this size: no message at all for most streams. */
export const STREAM_CREDIT_STEP = 1024 * 1024;

/** Chunks up to this many bytes travel as latin1 strings. */
export const STRING_CHUNK_MAX = 16 * 1024;

/**
 * A copy of `bytes` in an ArrayBuffer of its own, which can be transferred to another thread. `Buffer#fill`
 * with a same-length source is one memcpy; `TypedArray#set` from shared memory (a body arena slot) would be
 * V8's word-by-word relaxed copy.
 */
export function ownBuffer(bytes: Uint8Array): ArrayBuffer {
  const copy = Buffer.allocUnsafeSlow(bytes.byteLength);
  if (bytes.byteLength > 0) copy.fill(bytes);
  return copy.buffer as ArrayBuffer;
}

/**
 * `bytes`' own ArrayBuffer when the view spans all of it (then transferred as is, leaving `bytes` detached), else a
 * copy.
 */
export function transferable(bytes: Uint8Array): ArrayBuffer {
  const { buffer } = bytes;
  if (buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength) return buffer;
  return ownBuffer(bytes);
}

export function chunkBytes(chunk: Chunk): Uint8Array {
  return typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : new Uint8Array(chunk);
}

/** A latin1 string is ASCII exactly when its UTF-8 length is its length, which V8 answers without a JavaScript scan. */
export const isAsciiText = (text: string): boolean => Buffer.byteLength(text, 'utf8') === text.length;

/**
 * A chunk as a socket writer takes it: an ASCII string as it is (written as UTF-8, it is the same bytes, and
 * no buffer is allocated), anything else as bytes.
 */
export function wireChunk(chunk: Chunk): Uint8Array | string {
  return typeof chunk === 'string' && isAsciiText(chunk) ? chunk : chunkBytes(chunk);
}

export type FromWorker =
  /** A whole non-streamed answer in one message: a small JSON answer as its text, else its bytes (transferred). */
  | {
      t: 'whole';
      id: number;
      status: number;
      headers: Record<string, string>;
      body: ArrayBuffer | string;
      end: RelayEnd;
    }
  | { t: 'head'; id: number; status: number; headers: Record<string, string> }
  /**
   * Stream chunks coalesced per event-loop turn. `closing`: these chunks (with the ones before) hold the
   * stream's closing event (chat's `[DONE]`), so a client that leaves once they are written has its whole
   * answer, as clients that stop reading there do (the openai SDK).
   */
  | { t: 'data'; id: number; chunks: Chunk[]; closing?: boolean }
  /** The last chunks travel with the end, so a client that closes on its last byte is not taken for one that left. */
  | { t: 'end'; id: number; end: RelayEnd; chunks?: Chunk[] }
  /** A streamed create named its response: routes by that ID must work while the stream still runs. */
  | { t: 'created'; id: number; responseId: string }
  /** Before the head: the answer is this error. After it: the stream failed. */
  | { t: 'error'; id: number; error: ErrorPayload; usage: UsageReport | null }
  /**
   * The edge's abort ended the call: its last message, with the usage the answer had reported so far (a styleB
   * stream's input tokens arrive in its first event), or null.
   */
  | { t: 'aborted'; id: number; usage: UsageReport | null }
  /** Upload flow control: the worker has sent this many more bytes upstream. */
  | { t: 'ack'; id: number; bytes: number }
  /** The worker is done with a body's arena slot (its bytes were written, or will never be). Not tied to a call. */
  | { t: 'free'; slot: number };

/** A whole answer's body as text, however it travelled. */
export function wholeText(body: ArrayBuffer | string): string {
  return typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
}
