import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { GATEWAY_OPS } from '../../protocol/gateway.ts';
import { KINDS, PROVIDER_KINDS, type ProviderKind } from '../../protocol/providers.ts';
import type { FromWorker, RelayRequest } from '../../protocol/relay.ts';
import { isSharedBody, sharedBodyView, type WorkerArena } from '../shared/body-arena.ts';
import { ADAPTERS } from './providers/index.ts';
import { requestHeaders } from './providers/request.ts';
import type { RelayControl } from './relay-control.ts';
import { translatedBody, type Translated } from './translate-glue.ts';
import { upstreamBody } from './upstream-body.ts';

/** How the relay hands a message to the edge (the worker's port, or a test's recorder). */
export type Post = (message: FromWorker, transfer?: ArrayBuffer[]) => void;

// The upstream request of one relayed call (relay.ts): its URL, its headers and its body as undici takes it.

const HINTS = new Map<ProviderKind, ReadonlyMap<string, string>>(
  PROVIDER_KINDS.map((k) => [k, new Map((KINDS[k].hints as readonly string[]).map((h) => [h.toLowerCase(), h]))]),
);

/**
 * An arena body as undici's request body: one chunk, then the slot is freed. undici asks for the next chunk
 * only once `socket.write` took this one whole (it returned true, which for a chunk larger than the socket's
 * high-water mark means written to the kernel) or after 'drain'; and it ends the iteration (`finally`) only
 * after destroying the socket. Either way nothing reads the slot afterwards. A Buffer body would not do:
 * undici writes it and forgets it, while the kernel may still be taking its bytes.
 */
async function* slotBody(bytes: Buffer, free: () => void): AsyncGenerator<Buffer> {
  try {
    yield bytes;
  } finally {
    free();
  }
}

export interface UpstreamRequest {
  options: Dispatcher.DispatchOptions;
  /** The body asks the provider for stream usage the client did not ask for: the tap strips it. */
  injected: boolean;
}

export interface UpstreamRequestOptions {
  /** The call's ID, for the upload's acknowledgements. */
  id: number;
  req: RelayRequest;
  url: string;
  credential: string | null;
  control: RelayControl;
  post: Post;
  arena: WorkerArena | undefined;
  /** Frees the body's arena slot once nothing reads it again. */
  freeSlot: () => void;
  /** The gateway asks for stream usage (GatewayAdapter.streamUsage). */
  streamUsage: boolean;
  translated: Translated | null;
}

/** The upstream request of a call: its URL, its headers (the credential's last) and its body as undici takes it. */
export function upstreamRequest({
  id,
  req,
  url,
  credential,
  control,
  post,
  arena,
  freeSlot,
  streamUsage,
  translated,
}: UpstreamRequestOptions): UpstreamRequest {
  // Record hints, then the client's protocol headers and hints, then authentication last: nothing a
  // client sends can replace the credential headers. Assigned one by one into one object: a spread
  // followed by more properties is V8's slow clone, which also promotes the copy (see report() in usage/).
  const headers = requestHeaders(req.target, {});
  const hints = HINTS.get(req.target.kind);
  for (const name in req.headers) {
    // The client's protocol headers (anthropic-version, openai-beta) mean nothing to a translated upstream.
    if (translated !== null && !hints?.has(name)) continue;
    headers[hints?.get(name) ?? name] = req.headers[name]!;
  }
  headers['x-service-request-id'] = req.requestId;
  const auth = ADAPTERS[req.target.kind].authHeaders(credential);
  for (const name in auth) headers[name] = auth[name]!;
  // The protocol version is the client's choice when it states one; the adapter's is only a default.
  if (translated === null && req.headers['anthropic-version'] !== undefined)
    headers['anthropic-version'] = req.headers['anthropic-version'];
  let body: string | Uint8Array | Readable | AsyncIterable<Buffer> | undefined;
  let injected = false;
  if (req.bodyStreamed) {
    body = Readable.from(
      control.uploadBody((bytes) => post({ t: 'ack', id, bytes })),
      { objectMode: false },
    );
  } else if (req.body !== null && translated !== null) {
    body = translatedBody(req, arena, translated);
    freeSlot();
    headers['content-type'] = 'application/json';
  } else if (req.body !== null) {
    // A body in the arena is read in place; edits that fit are written into its slot.
    let slot: Buffer | undefined;
    if (isSharedBody(req.body)) {
      if (!arena) throw new Error('a body in the arena reached a worker without one');
      slot = sharedBodyView(arena.buffer, arena.slotSize, req.body);
    }
    const prepared = upstreamBody(req, streamUsage, slot);
    injected = prepared.injected;
    headers['content-type'] = 'application/json';
    if (slot !== undefined && prepared.body === slot) {
      body = slotBody(slot, freeSlot);
      headers['content-length'] = String(slot.byteLength);
    } else {
      body = prepared.body;
      // Spliced into a new buffer or re-serialised: the slot, if any, is not read again.
      freeSlot();
    }
  }
  const target = new URL(url);
  const options: Dispatcher.DispatchOptions = {
    origin: target.origin,
    path: target.pathname + target.search,
    method: GATEWAY_OPS[req.op].method,
    headers,
    // undici writes an async iterable chunk by chunk (writeIterable); its types list only streams.
    body: body as Dispatcher.DispatchOptions['body'],
    headersTimeout: req.target.timeouts.headMs,
    bodyTimeout: req.target.timeouts.idleMs,
  };
  return { options, injected };
}
