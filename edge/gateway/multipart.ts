import { transferable } from '../../protocol/relay.ts';
import type { ResolvedModel } from '../../protocol/catalog.ts';
import { createModelScan, type ModelScan } from '../http/multipart-model.ts';
import type { RouteContext, RouteResult } from '../http/router.ts';
import type { RelayCall } from './relay-response.ts';

// A multipart upload (image edits, transcriptions): read until the `model` field, resolve it, then stream
// what was read (memory, or a spill file when the file part came first) and the rest of the upload to the
// worker, never holding the whole upload.

/** Yields `source` with the bytes [start, end) replaced: the client's model name becomes the upstream's. */
export async function* splice(
  source: AsyncIterable<Uint8Array>,
  start: number,
  end: number,
  replacement: Uint8Array,
): AsyncGenerator<Uint8Array> {
  let offset = 0;
  for await (const chunk of source) {
    const from = offset;
    offset += chunk.byteLength;
    if (offset <= start || from >= end) {
      yield chunk;
      continue;
    }
    if (start > from) yield chunk.subarray(0, start - from);
    if (start >= from && start < offset) yield replacement;
    if (end < offset) yield chunk.subarray(end - from);
  }
}

export interface MultipartDeps {
  spillDir: string;
  resolve(model: string): ResolvedModel;
  start(resolved: ResolvedModel, clientModel: string): RelayCall;
  follow(resolved: ResolvedModel, call: RelayCall): Promise<RouteResult>;
  /** The model scan; injected by tests to fail where the file system seldom does. */
  scan?: typeof createModelScan;
}

/** The upload, upstream: the scanned head with the model replaced, then the rest of the body as it comes. */
async function pumpUpload(
  scan: ModelScan,
  body: AsyncIterator<Uint8Array>,
  ended: boolean,
  upstreamModelId: string,
  call: RelayCall,
): Promise<void> {
  const range = scan.modelRange()!;
  const upstreamModel = new TextEncoder().encode(upstreamModelId);
  for await (const chunk of splice(scan.replay(), range.start, range.end, upstreamModel)) {
    await call.upload.ready();
    call.upload.send(transferable(chunk));
  }
  if (!ended) {
    for (let next = await body.next(); !next.done; next = await body.next()) {
      await call.upload.ready();
      call.upload.send(transferable(next.value));
    }
  }
  call.upload.end();
}

export async function relayMultipart(ctx: RouteContext<unknown>, deps: MultipartDeps): Promise<RouteResult> {
  const scan = (deps.scan ?? createModelScan)(ctx.req.headers['content-type']!, { spillDir: deps.spillDir });
  const body = ctx.bodyStream![Symbol.asyncIterator]();
  let handedOver = false;
  try {
    let model: string | null = null;
    let ended = false;
    while (model === null) {
      const next = await body.next();
      if (next.done) {
        model = await scan.end();
        ended = true;
      } else model = await scan.push(next.value);
    }
    const resolved = deps.resolve(model);
    const call = deps.start(resolved, model);
    handedOver = true;
    // The upload runs beside the wait for the answer's head, which usually comes only after it. Nothing it
    // does may reject unobserved (an unhandled rejection ends the process): every failure aborts the call.
    pumpUpload(scan, body, ended, resolved.model.upstreamModelId, call)
      .catch(() => call.handle.abort())
      .finally(() => scan.dispose().catch(() => undefined));
    return await deps.follow(resolved, call);
  } finally {
    if (!handedOver) await scan.dispose();
  }
}
