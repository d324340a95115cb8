import { toServiceError } from '../../protocol/errors.ts';
import type { RelayRequest } from '../../protocol/relay.ts';
import type { RuntimeControl } from '../../protocol/runtime.ts';
import type { RelayHandle, RelaySink } from '../../workers/shared/relay-sink.ts';
import type { ControlAnswer, ControlOptions, RuntimePool } from '../../workers/runtime/runtime-pool.ts';
import type { Lease, MemoryScheduler } from './memory-scheduler.ts';

// The embedded runtime behind the scheduler (docs/api.md, Local-model scheduler): a call or a `load` action
// takes a lease on its model's memory before it reaches the runtime worker, and gives it back when its last
// message comes; the runtime's own news (a load finished, an idle model unloaded, the worker gone) keeps the
// scheduler's units true. The unit of an embedded model is `embedded:` and its library name: every catalog ID
// of one file names the same loaded model.

export const embeddedUnit = (name: string) => `embedded:${name}`;

export interface ScheduledRuntimeDeps {
  pool: RuntimePool;
  scheduler: MemoryScheduler;
  /** What model `name` will hold once loaded (control/scheduler/model-bytes.ts). */
  bytesOf(name: string): Promise<number>;
}

export interface ScheduledRuntime extends RuntimePool {
  /** From the pool's events: `name` finished loading. */
  loadedEvent(name: string): void;
  /** From the pool's events: the runtime unloaded an idle `name`. */
  expiredEvent(name: string): void;
  /** The worker stopped: every embedded model it held is gone. */
  workerLost(): void;
}

/** The loads under way and the units this runtime holds, which the functions below keep. */
interface RuntimeState {
  readonly deps: ScheduledRuntimeDeps;
  readonly loading: Map<string, Set<Lease>>;
  readonly names: Set<string>;
}

export function scheduledRuntime(deps: ScheduledRuntimeDeps): ScheduledRuntime {
  const S: RuntimeState = {
    deps,
    loading: new Map<string, Set<Lease>>(),
    names: new Set<string>(),
  };
  return {
    ...(S.deps.pool.arena && { arena: S.deps.pool.arena }),
    start(req, sink) {
      const name = req.upstreamModelId;
      if (name === null) return S.deps.pool.start(req, sink);
      return admitted(S, req, name, sink);
    },
    control: (c, options) => control(S, c, options),
    loaded: () => S.deps.pool.loaded(),
    close: () => S.deps.pool.close(),
    loadedEvent(name) {
      for (const lease of S.loading.get(name) ?? []) lease.loaded();
      S.loading.delete(name);
    },
    expiredEvent(name) {
      S.names.delete(name);
      S.deps.scheduler.unloaded(embeddedUnit(name));
    },
    workerLost() {
      for (const name of S.names) S.deps.scheduler.crashed(embeddedUnit(name));
      S.names.clear();
      S.loading.clear();
    },
  };
}

/** Takes the model's lease, then starts the call; the handle answers for the call before and after. */
function admitted(S: RuntimeState, req: RelayRequest, name: string, sink: RelaySink): RelayHandle {
  const stop = new AbortController();
  let inner: RelayHandle | null = null;
  const pending: (() => void)[] = [];
  void lease(S, name, req.session ?? null, stop.signal).then(
    (held) => {
      if (stop.signal.aborted) {
        held?.release();
        return sink.aborted(null);
      }
      inner = S.deps.pool.start(req, held === null ? sink : releasing(S, sink, held, name));
      for (const run of pending.splice(0)) run();
    },
    (err: unknown) => (stop.signal.aborted ? sink.aborted(null) : sink.error(toServiceError(err), null)),
  );
  const later = (run: (h: RelayHandle) => void) => (inner !== null ? run(inner) : pending.push(() => run(inner!)));
  return {
    body: (chunk) => later((h) => h.body(chunk)),
    pause: () => later((h) => h.pause()),
    resume: () => later((h) => h.resume()),
    credit: (bytes) => later((h) => h.credit(bytes)),
    abort() {
      if (inner !== null) return inner.abort();
      // Still waiting for memory: the wait ends, and the sink hears `aborted`.
      if (!stop.signal.aborted) stop.abort();
      return true;
    },
  };
}

/** Null when the file cannot be sized (a bad name, a file gone): the runtime answers that call as it would. */
async function lease(
  S: RuntimeState,
  name: string,
  session: string | null,
  signal?: AbortSignal,
): Promise<Lease | null> {
  const bytes = await S.deps.bytesOf(name).catch(() => null);
  signal?.throwIfAborted();
  if (bytes === null) return null;
  const held = await S.deps.scheduler.admit(embeddedUnit(name), bytes, { session, ...(signal && { signal }) });
  S.names.add(name);
  if (held.loads) {
    let set = S.loading.get(name);
    if (!set) S.loading.set(name, (set = new Set()));
    set.add(held);
  }
  return held;
}

/** The sink, giving the lease back with the call's last message. */
function releasing(S: RuntimeState, sink: RelaySink, held: Lease, name: string): RelaySink {
  let done = false;
  const end = (answered: boolean) => {
    if (done) return;
    done = true;
    if (held.loads && S.loading.get(name)?.has(held)) settleLoad(S, name, held, answered);
    else held.release();
  };
  return {
    whole(status, headers, body, e) {
      end(true);
      sink.whole(status, headers, body, e);
    },
    head(status, headers) {
      // A stream's head comes once the model answers: it loaded.
      if (held.loads) loadingDone(S, name, held);
      sink.head(status, headers);
    },
    data: (chunks, closing) => sink.data(chunks, closing),
    end(e, chunks) {
      end(true);
      sink.end(e, chunks);
    },
    error(error, usage) {
      end(false);
      sink.error(error, usage);
    },
    aborted(usage) {
      end(false);
      sink.aborted(usage);
    },
    ...(sink.ack && { ack: (bytes: number) => sink.ack!(bytes) }),
    ...(sink.created && { created: (id: string) => sink.created!(id) }),
  };
}

function loadingDone(S: RuntimeState, name: string, held: Lease): void {
  if (!S.loading.get(name)?.delete(held)) return;
  held.loaded();
}

/**
 * The loader's call ended before the runtime said its model loaded: an answer means it did; an error may
 * have come before or after the load, so the runtime's list decides.
 */
function settleLoad(S: RuntimeState, name: string, held: Lease, answered: boolean): void {
  S.loading.get(name)?.delete(held);
  if (answered) {
    held.loaded();
    held.release();
    return;
  }
  S.deps.pool.loaded().then(
    (list) => {
      if (list.some((e) => e.name === name)) held.loaded();
      else S.names.delete(name);
      held.release();
    },
    () => held.release(),
  );
}

async function control(S: RuntimeState, c: RuntimeControl, options?: ControlOptions): Promise<ControlAnswer> {
  if (c.op === 'unload') {
    const answer = await S.deps.pool.control(c, options);
    S.names.delete(c.name);
    S.deps.scheduler.removed(embeddedUnit(c.name));
    return answer;
  }
  if (c.op !== 'load') return S.deps.pool.control(c, options);
  const held = await lease(S, c.name, null, options?.signal);
  if (held === null) return S.deps.pool.control(c, options);
  try {
    const answer = await S.deps.pool.control(c, options);
    if (S.loading.get(c.name)?.delete(held)) held.loaded();
    return answer;
  } finally {
    if (held.loads && S.loading.get(c.name)?.has(held)) settleLoad(S, c.name, held, false);
    else held.release();
  }
}
