import { basename, join } from 'node:path';
import type { ServiceState } from '../protocol/http/services.ts';
import type { Tuning } from '../protocol/http/settings.ts';
import type { Logger } from 'pino';
import type { StoreEnv } from '../store/env.ts';
import type { ServiceRecord, ServiceRepo } from '../store/service-repo.ts';
import type { ModelLibrary } from '../workers/runtime/library-watch.ts';
import type { EventBus } from './events.ts';
import {
  createInstance,
  type Instance,
  type InstanceStatus,
  LaunchRefused,
  type Timing,
} from './llama-server-process.ts';
import { locateLlamaServer } from './llama-server-binary.ts';
import type { HeldRoom } from './scheduler/residency.ts';

// The supervised llama-server processes of control/services.ts, one entry each: its record, its process, what
// its changes publish, and the pid record each start and exit writes.

export interface Entry {
  record: ServiceRecord;
  instance: Instance;
  /** Whether a llama-server could be found at the last look, for the view's `binary`. */
  binaryName: string | null;
  /** The tuning the current process was started with (settings may have changed since). */
  launched: Tuning | null;
  /** Its removal has started: it is stopping for good, and no start, stop or restart may reach it. */
  removing: boolean;
  /** The process's room in the scheduler's budget, from its launch until it ends. */
  lease: HeldRoom | null;
}

/** What control/services.ts's deps give the entries. */
export interface EntriesDeps {
  env: StoreEnv;
  repo: ServiceRepo;
  bus: EventBus;
  library: ModelLibrary;
  modelsDirectory(): string;
  tuning(): Tuning;
  timing: Timing;
  processEnv: NodeJS.ProcessEnv;
  log: Logger;
  admit?(serviceId: string, model: string, tuning: Tuning): Promise<HeldRoom>;
}

/** States in which a process may hold memory: from its launch until it ends. */
const HOLDS_MEMORY = new Set<ServiceState>(['starting', 'running']);

export const effectiveTuning = (tuning: () => Tuning, r: ServiceRecord): Tuning => ({ ...tuning(), ...r.tuning });

export function createServiceEntries(deps: EntriesDeps) {
  const entries = new Map<string, Entry>();
  /** Pid records being written; shutdown waits for them before the store closes. */
  let writes: Promise<void> = Promise.resolve();

  return {
    entries,
    entryFor,
    /** Settles once the pid records written so far are. */
    written: () => writes,
  };

  function entryFor(record: ServiceRecord): Entry {
    const entry: Entry = {
      record,
      binaryName: null,
      launched: null,
      removing: false,
      lease: null,
      instance: createInstance({
        timing: deps.timing,
        env: deps.processEnv,
        async launchSpec() {
          const binary = await locateLlamaServer(deps.processEnv, entry.record.binary);
          if (binary === null) throw new LaunchRefused('binary_missing');
          entry.binaryName = basename(binary);
          const view = deps.library.lookup(entry.record.model);
          if (!view || view.health !== 'ok') throw new LaunchRefused('model_missing');
          entry.launched = effectiveTuning(deps.tuning, entry.record);
          await admitted(entry);
          return {
            binary,
            modelPath: join(deps.modelsDirectory(), entry.record.model),
            port: entry.record.port,
            tuning: entry.launched,
          };
        },
        onChange(status, previous) {
          if (!HOLDS_MEMORY.has(status.state)) releaseRoom(entry);
          publish(entry, status, previous);
          rememberPid(entry, status.pid);
        },
      }),
    };
    return entry;
  }

  /** The process's room in the budget: waits for it (runtime.loadWaitSeconds), or refuses the launch. */
  async function admitted(entry: Entry): Promise<void> {
    if (deps.admit === undefined) return;
    releaseRoom(entry);
    let lease: HeldRoom;
    try {
      lease = await deps.admit(entry.record.id, entry.record.model, entry.launched!);
    } catch (err) {
      deps.log.warn(
        { serviceId: entry.record.id, err: String(err).slice(0, 300) },
        'no memory for the llama-server; its start waits and tries again',
      );
      throw new LaunchRefused('memory_busy');
    }
    entry.lease = lease;
    // Stopped while it waited: no process will hold the room.
    if (!HOLDS_MEMORY.has(entry.instance.status().state)) releaseRoom(entry);
  }

  function releaseRoom(entry: Entry): void {
    const lease = entry.lease;
    entry.lease = null;
    if (lease === null) return;
    lease.end();
  }

  function publish(entry: Entry, status: InstanceStatus, previous: ServiceState): void {
    if (status.state === previous) return;
    deps.bus.publish('service.state', {
      id: entry.record.id,
      kind: 'llamacpp',
      state: status.state,
      previous,
      restarts: status.restarts,
      nextStartAt: status.nextStartAt,
      lastExit: status.lastExit,
    });
    deps.log.info(
      { serviceId: entry.record.id, state: status.state, previous, reason: status.lastExit?.reason ?? null },
      'service state',
    );
  }

  /** The pid is stored while a process lives, so a service killed meanwhile can end it at its next start. */
  function rememberPid(entry: Entry, pid: number | null): void {
    if (entry.record.pid === pid || !entries.has(entry.record.id) || !deps.env.isOpen()) return;
    entry.record = { ...entry.record, pid };
    writes = writes
      .then(() =>
        entries.get(entry.record.id) === entry ? deps.env.commit(() => deps.repo.stagePut(entry.record)) : undefined,
      )
      .catch((err: unknown) => deps.log.warn({ err: String(err).slice(0, 300) }, 'could not record a service process'));
  }
}
