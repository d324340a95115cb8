import type { MessagePort } from 'node:worker_threads';
import { toServiceError } from '../../protocol/errors.ts';
import { CallTable } from '../../state/call-table.ts';
import type { FromWorker, RelayRequest, ToWorker } from '../../protocol/relay.ts';
import { deliverRelayMessage, type RelayPool, type RelaySink } from './relay-sink.ts';

// A relay pool another thread owns, reached over a MessagePort with the relay workers' own messages
// (protocol/relay.ts): an edge thread's calls to the embedded runtime, whose model and worker live with the
// control thread. Bodies cross as bytes; a body in this thread's arena is copied out first by the caller
// (withEmbeddedRuntime does).

/** The edge thread's side: a RelayPool whose calls run in the pool served on the other end of `port`. */
export function remoteRelayPool(port: MessagePort): RelayPool {
  const inflight = new CallTable<RelaySink>();
  let nextId = 1;
  let closed = false;
  port.on('message', (m: FromWorker) => {
    if (m.t !== 'free') deliverRelayMessage(m, inflight, closed);
    if (inflight.size === 0) port.unref();
  });
  port.unref();
  const send = (m: ToWorker, transfer?: ArrayBuffer) => port.postMessage(m, transfer === undefined ? [] : [transfer]);
  return {
    start(req: RelayRequest, sink: RelaySink) {
      const id = nextId++;
      inflight.set(id, sink);
      port.ref();
      send({ t: 'start', id, req }, req.body instanceof ArrayBuffer ? req.body : undefined);
      return {
        body: (chunk) => send({ t: 'body', id, chunk }, chunk ?? undefined),
        pause: () => send({ t: 'pause', id }),
        resume: () => send({ t: 'resume', id }),
        credit: (bytes) => send({ t: 'credit', id, bytes }),
        abort() {
          if (!inflight.has(id)) return false;
          send({ t: 'abort', id });
          return true;
        },
      };
    },
    async close() {
      closed = true;
      for (const id of inflight.ids()) send({ t: 'abort', id });
    },
  };
}

/** The control thread's side: runs each call arriving on `port` in `pool`, and posts its sink's calls back. */
export function serveRelayPool(port: MessagePort, pool: RelayPool): { close(): void } {
  const handles = new Map<number, ReturnType<RelayPool['start']>>();
  const post = (m: FromWorker, transfer?: ArrayBuffer) => port.postMessage(m, transfer === undefined ? [] : [transfer]);
  const sinkOf = (id: number): RelaySink => ({
    whole(status, headers, body, end) {
      handles.delete(id);
      post({ t: 'whole', id, status, headers, body, end }, body instanceof ArrayBuffer ? body : undefined);
    },
    head: (status, headers) => post({ t: 'head', id, status, headers }),
    data: (chunks, closing) => post({ t: 'data', id, chunks, ...(closing === true && { closing }) }),
    end(end, chunks) {
      handles.delete(id);
      post({ t: 'end', id, end, ...(chunks !== undefined && { chunks }) });
    },
    error(error, usage) {
      handles.delete(id);
      post({ t: 'error', id, error: error.toPayload(), usage });
    },
    aborted(usage) {
      handles.delete(id);
      post({ t: 'aborted', id, usage });
    },
    ack: (bytes) => post({ t: 'ack', id, bytes }),
    created: (responseId) => post({ t: 'created', id, responseId }),
  });
  port.on('message', (m: ToWorker) => {
    if (m.t === 'start') {
      try {
        handles.set(m.id, pool.start(m.req, sinkOf(m.id)));
      } catch (err) {
        post({ t: 'error', id: m.id, error: toServiceError(err).toPayload(), usage: null });
      }
      return;
    }
    const handle = handles.get(m.id);
    if (handle === undefined) return;
    if (m.t === 'body') handle.body(m.chunk);
    else if (m.t === 'pause') handle.pause();
    else if (m.t === 'resume') handle.resume();
    else if (m.t === 'credit') handle.credit(m.bytes);
    else if (m.t === 'abort' && !handle.abort()) handles.delete(m.id);
  });
  port.unref();
  return {
    close() {
      for (const handle of handles.values()) handle.abort();
      handles.clear();
      port.close();
    },
  };
}
