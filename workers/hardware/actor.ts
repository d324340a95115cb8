import { arch, availableParallelism, cpus, freemem, platform, release, totalmem } from 'node:os';
import { Worker } from 'node:worker_threads';
import type {
  HardwareProbeReply,
  HardwareProbeRequest,
  HardwareTelemetry,
  ProbedTelemetry,
  ProbeOutcome,
  TelemetryReason,
} from '../../protocol/http/hardware.ts';
import { partialTelemetry, type NodeFacts } from './probe.ts';

// The edge's side of the hardware actor: one worker thread, the last good probe cached in memory, one
// probe in flight at a time, and a time limit on each probe so no route ever waits on the hardware.

export interface HardwareActor {
  /** The last probe's answer at once; only before the first probe has finished does it wait for it (bounded). */
  telemetry(): Promise<HardwareTelemetry>;
  /** Reprobes and answers with the result; concurrent callers share one probe. Never rejects. */
  refresh(): Promise<HardwareTelemetry>;
  close(): Promise<void>;
}

export interface HardwareActorOptions {
  /** Per probe, worker start-up included. */
  timeoutMs?: number;
  /** Runs on this thread instead of the worker's probe (tests: a probe that never settles, a canned answer). */
  probeOverride?: () => Promise<ProbeOutcome>;
  /** The worker's entry script (tests: one that crashes). */
  workerEntry?: URL;
  /** Called as each probe starts (tests count probes). */
  onProbe?: () => void;
  /** Where a failed probe is reported (the service's pino logger fits); codes only, never a cause. */
  log?: { warn(fields: Record<string, unknown>, message: string): void };
}

export const DEFAULT_PROBE_TIMEOUT_MS = 5_000;

interface ProbeSource {
  probe(): Promise<ProbeOutcome>;
  /** The probe overran its time: whatever runs it may be wedged and is dropped. */
  abandon(): void;
  close(): Promise<void>;
}

/**
 * The worker starts on the first probe and stays for the next; one that crashed or was abandoned is
 * replaced by the next probe, so a thread that fails as it starts cannot spin in a restart loop.
 */
function workerSource(entry: URL): ProbeSource {
  let slot: { worker: Worker; pending: Map<number, (outcome: ProbeOutcome) => void> } | null = null;
  let nextId = 1;
  let closed = false;

  function spawn() {
    const worker = new Worker(entry);
    const current = { worker, pending: new Map<number, (outcome: ProbeOutcome) => void>() };
    worker.on('message', (m: HardwareProbeReply) => {
      const settle = current.pending.get(m.id);
      current.pending.delete(m.id);
      settle?.(m.outcome);
    });
    const lost = () => {
      if (slot === current) slot = null;
      for (const settle of current.pending.values()) settle({ ok: false, reason: 'worker_crashed' });
      current.pending.clear();
    };
    worker.on('error', lost);
    worker.on('exit', lost);
    // Never what keeps the process alive. After the listeners: adding a 'message' listener refs the worker again.
    worker.unref();
    return current;
  }

  return {
    probe() {
      if (closed) return Promise.resolve({ ok: false, reason: 'probe_failed' });
      const current = (slot ??= spawn());
      const id = nextId++;
      return new Promise((resolve) => {
        current.pending.set(id, resolve);
        current.worker.postMessage({ kind: 'hardware.probe', id } satisfies HardwareProbeRequest);
      });
    },
    abandon() {
      const current = slot;
      slot = null;
      // terminate() cannot interrupt a synchronous child process (systeminformation runs nvidia-smi that way):
      // such a thread ends when its child does. Nothing here waits for it.
      void current?.worker.terminate();
    },
    async close() {
      closed = true;
      const current = slot;
      slot = null;
      await current?.worker.terminate();
    },
  };
}

function overrideSource(probe: () => Promise<ProbeOutcome>): ProbeSource {
  return { probe, abandon: () => undefined, close: async () => undefined };
}

const nodeFacts = (): NodeFacts => ({
  platform: platform(),
  arch: arch(),
  kernel: release(),
  cpuModel: cpus()[0]?.model ?? null,
  logicalCores: availableParallelism(),
  totalBytes: totalmem(),
  freeBytes: freemem(),
});

export function createHardwareActor(options: HardwareActorOptions = {}): HardwareActor {
  const timeoutMs = options.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const source = options.probeOverride
    ? overrideSource(options.probeOverride)
    : workerSource(options.workerEntry ?? new URL('./entry.js', import.meta.url));
  let good: ProbedTelemetry | null = null;
  /** Why the latest probe failed; null once one succeeds. */
  let failure: TelemetryReason | null = null;
  let inflight: Promise<HardwareTelemetry> | null = null;
  let closed = false;

  function current(): HardwareTelemetry {
    if (good) return { ...good, stale: failure !== null, partial: false, reason: failure };
    return partialTelemetry(nodeFacts(), failure ?? 'probe_failed', Date.now());
  }

  async function probeWithin(): Promise<ProbeOutcome> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<ProbeOutcome>((resolve) => {
      timer = setTimeout(() => resolve({ ok: false, reason: 'probe_timeout' }), timeoutMs);
    });
    try {
      return await Promise.race([source.probe(), timeout]);
    } catch {
      // A probe that throws, even synchronously, is a failure like any other.
      return { ok: false, reason: 'probe_failed' };
    } finally {
      clearTimeout(timer);
    }
  }

  async function run(): Promise<HardwareTelemetry> {
    options.onProbe?.();
    const outcome = await probeWithin();
    if (outcome.ok) {
      good = outcome.telemetry;
      failure = null;
    } else {
      failure = outcome.reason;
      if (outcome.reason === 'probe_timeout') source.abandon();
      options.log?.warn({ reason: outcome.reason, timeoutMs, hasLastGood: good !== null }, 'hardware probe failed');
    }
    return current();
  }

  function refresh(): Promise<HardwareTelemetry> {
    if (closed) return Promise.resolve(current());
    return (inflight ??= run().finally(() => {
      inflight = null;
    }));
  }

  // The first probe starts with the actor, so the first GET finds it done or nearly done.
  void refresh();

  return {
    telemetry() {
      if (good === null && inflight) return inflight;
      return Promise.resolve(current());
    },
    refresh,
    async close() {
      closed = true;
      await source.close();
    },
  };
}
