import { basename, join } from 'node:path';
import type { Logger } from 'pino';
import { ServiceError } from '../protocol/errors.ts';
import type { Tuning } from '../protocol/http/settings.ts';
import type { ServiceCreate, ServiceState, ServiceView } from '../protocol/http/services.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import type { ServiceRecord, ServiceRepo } from '../store/service-repo.ts';
import type { ModelLibrary } from '../workers/runtime/library-watch.ts';
import type { Actor } from './actor.ts';
import { auditedCrud, type AuditEntry } from './crud.ts';
import type { EventBus } from './events.ts';
import {
  createInstance,
  LaunchRefused,
  type Instance,
  type InstanceStatus,
  type Timing,
} from './llama-server-process.ts';
import { locateLlamaServer, resolvedLlamaServer } from './llama-server-binary.ts';
import { bindable, checkNotTaken, checkPort, endLeftover } from './service-ports.ts';

// /v1/services: the llama-server processes the service supervises (records in the store, so they start again
// with the service) and the embedded runtime, listed beside them as the service it is part of. Every change
// of a process's state is published as `service.state`.

export const MAX_SERVICES = 32;
export const EMBEDDED_SERVICE_ID = 'embedded';

export interface ServicesDeps {
  env: StoreEnv;
  repo: ServiceRepo;
  audit: AuditRepo;
  bus: EventBus;
  library: ModelLibrary;
  modelsDirectory(): string;
  tuning(): Tuning;
  /** How many models the embedded runtime holds now. */
  embeddedLoaded(): Promise<number>;
  timing: Timing;
  processEnv: NodeJS.ProcessEnv;
  log: Logger;
  /** The port the service itself listens on, once bound. */
  ownPort(): number | null;
}

interface Entry {
  record: ServiceRecord;
  instance: Instance;
  /** Whether a llama-server could be found at the last look, for the view's `binary`. */
  binaryName: string | null;
  /** The tuning the current process was started with (settings may have changed since). */
  launched: Tuning | null;
  /** Its removal has started: it is stopping for good, and no start, stop or restart may reach it. */
  removing: boolean;
}

// Over 80 lines as a closure of short methods over one state, the shape of every control service here.
export function createServices(deps: ServicesDeps) {
  const entries = new Map<string, Entry>();
  let closed = false;
  /** Pid records being written; shutdown waits for them before the store closes. */
  let writes: Promise<void> = Promise.resolve();

  const effectiveTuning = (r: ServiceRecord): Tuning => ({ ...deps.tuning(), ...r.tuning });

  function entryFor(record: ServiceRecord): Entry {
    const entry: Entry = {
      record,
      binaryName: null,
      launched: null,
      removing: false,
      instance: createInstance({
        timing: deps.timing,
        env: deps.processEnv,
        async launchSpec() {
          const binary = await locateLlamaServer(deps.processEnv, entry.record.binary);
          if (binary === null) throw new LaunchRefused('binary_missing');
          entry.binaryName = basename(binary);
          const view = deps.library.lookup(entry.record.model);
          if (!view || view.health !== 'ok') throw new LaunchRefused('model_missing');
          entry.launched = effectiveTuning(entry.record);
          return {
            binary,
            modelPath: join(deps.modelsDirectory(), entry.record.model),
            port: entry.record.port,
            tuning: entry.launched,
          };
        },
        onChange(status, previous) {
          publish(entry, status, previous);
          rememberPid(entry, status.pid);
        },
      }),
    };
    return entry;
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

  function view(entry: Entry): ServiceView {
    const r = entry.record;
    const s = entry.instance.status();
    return {
      id: r.id,
      kind: 'llamacpp',
      displayName: r.displayName,
      state: s.state,
      desired: r.desired,
      model: r.model,
      // What the running process was given; while none runs, what the next start would give it.
      tuning: s.pid !== null && entry.launched !== null ? entry.launched : effectiveTuning(r),
      tuningOverrides: { ...r.tuning },
      url: `http://127.0.0.1:${r.port}`,
      port: r.port,
      binary: { name: entry.binaryName ?? 'llama-server', source: r.binary === null ? 'path' : 'configured' },
      pid: s.pid,
      restarts: s.restarts,
      nextStartAt: s.nextStartAt,
      lastExit: s.lastExit,
      startedAt: s.startedAt,
      readyAt: s.readyAt,
      actions: ['start', 'stop', 'restart'],
      createdAt: new Date(r.createdAt).toISOString(),
      updatedAt: new Date(r.updatedAt).toISOString(),
    };
  }

  async function embeddedView(): Promise<ServiceView> {
    return {
      id: EMBEDDED_SERVICE_ID,
      kind: 'embedded',
      displayName: 'Embedded llama.cpp',
      state: closed ? 'stopped' : 'running',
      desired: 'running',
      model: null,
      tuning: deps.tuning(),
      tuningOverrides: null,
      url: null,
      port: null,
      binary: null,
      pid: null,
      restarts: 0,
      nextStartAt: null,
      lastExit: null,
      startedAt: null,
      readyAt: null,
      loadedModels: await deps.embeddedLoaded(),
      actions: [],
      createdAt: null,
      updatedAt: null,
    };
  }

  function must(id: string): Entry {
    if (id === EMBEDDED_SERVICE_ID) {
      throw new ServiceError('CONFLICT', 'The embedded runtime runs inside the service: it starts and stops with it.', {
        param: 'id',
      });
    }
    const entry = id.length <= 63 ? entries.get(id) : undefined;
    if (!entry || entry.removing) throw notFound(id);
    return entry;
  }

  const notFound = (id: string) =>
    new ServiceError('NOT_FOUND', `No service with ID \`${id.slice(0, 63)}\`.`, { param: 'id' });
  const crud = auditedCrud<ServiceRecord>({
    env: deps.env,
    audit: deps.audit,
    resourceType: 'service',
    repo: deps.repo,
    keyOf: (r) => r.id,
    notFound,
  });
  const entryOf = (
    action: 'create' | 'delete' | 'start' | 'stop' | 'restart',
    r: ServiceRecord,
    actor: Actor,
    requestId: string,
  ): AuditEntry => ({
    action: `service.${action}`,
    actor,
    requestId,
    metadata: { kind: r.kind, model: r.model },
  });

  async function setDesired(
    entry: Entry,
    desired: ServiceRecord['desired'],
    action: 'start' | 'stop' | 'restart',
    actor: Actor,
    requestId: string,
  ): Promise<void> {
    const next = { ...entry.record, desired, updatedAt: Date.now() };
    await crud.update(next, entryOf(action, entry.record, actor, requestId));
    entry.record = next;
    startable(entry);
  }

  /** A removal that began meanwhile owns the process now: no start, stop or restart answers for it or runs it. */
  function startable(entry: Entry): void {
    if (entry.removing) throw notFound(entry.record.id);
  }

  return {
    /** Ends processes left by a killed predecessor, then starts the services that should run. */
    async boot(): Promise<void> {
      for (const record of deps.repo.all()) {
        if (record.pid !== null && (await endLeftover(record.pid, record.port))) {
          deps.log.warn({ serviceId: record.id }, 'ended a llama-server left running by an earlier run of the service');
        }
        const entry = entryFor({ ...record, pid: null });
        entries.set(record.id, entry);
        if (record.desired === 'running') entry.instance.start().catch(() => undefined);
      }
    },

    async list(): Promise<ServiceView[]> {
      const sorted = [...entries.values()].sort(
        (a, b) => a.record.createdAt - b.record.createdAt || a.record.id.localeCompare(b.record.id),
      );
      return [await embeddedView(), ...sorted.map(view)];
    },

    async get(id: string): Promise<ServiceView> {
      return id === EMBEDDED_SERVICE_ID ? embeddedView() : view(must(id));
    },

    async create(input: ServiceCreate, actor: Actor, requestId: string): Promise<ServiceView> {
      if (entries.size >= MAX_SERVICES)
        throw new ServiceError('CONFLICT', `At most ${MAX_SERVICES} services may exist; delete one first.`);
      const id = input.id ?? nextId();
      if (id === EMBEDDED_SERVICE_ID || entries.has(id))
        throw new ServiceError('CONFLICT', `A service with ID \`${id}\` exists already.`, { param: 'id' });
      const model = deps.library.lookup(input.model);
      if (!model)
        throw new ServiceError(
          'NOT_FOUND',
          `No model \`${input.model.slice(0, 200)}\` in the model library (GET /v1/runtime/models).`,
          { param: 'model' },
        );
      if (model.health !== 'ok')
        throw new ServiceError(
          'INVALID_REQUEST',
          `The model file is ${model.health}: ${model.problem ?? model.health}.`,
          { param: 'model' },
        );
      const binary = input.binary ?? null;
      if (binary !== null && (await resolvedLlamaServer(binary)) === null) {
        throw new ServiceError(
          'INVALID_REQUEST',
          '`binary` must be the absolute path of an executable file named llama-server (a link must lead to one).',
          { param: 'binary' },
        );
      }
      if ((await locateLlamaServer(deps.processEnv, binary)) === null) {
        throw new ServiceError(
          'CONFLICT',
          'No llama-server executable is on the PATH of the service; install llama.cpp or name one in `binary`.',
          { param: 'binary' },
        );
      }
      let port = input.port ?? 0;
      if (port !== 0) await checkPort(port, deps.ownPort(), entries.values());
      else {
        const picked = await bindable(0);
        if (picked === null) throw new Error('no free loopback port');
        checkNotTaken(picked, entries.values());
        port = picked;
      }
      const now = Date.now();
      const autoStart = input.autoStart ?? true;
      const record: ServiceRecord = {
        id,
        kind: 'llamacpp',
        displayName: input.displayName ?? `llama-server ${input.model.slice(0, 80)}`,
        model: input.model,
        tuning: { ...input.tuning },
        port,
        binary,
        desired: autoStart ? 'running' : 'stopped',
        pid: null,
        createdAt: now,
        updatedAt: now,
      };
      await crud.create(record, entryOf('create', record, actor, requestId));
      const entry = entryFor(record);
      entries.set(id, entry);
      if (autoStart) entry.instance.start().catch(() => undefined);
      return view(entry);
    },

    async remove(id: string, actor: Actor, requestId: string): Promise<ServiceView> {
      const entry = must(id);
      entry.removing = true;
      try {
        await entry.instance.stop();
        // Out of the map first, so no pid record of its last process is written after the removal.
        entries.delete(id);
        await writes;
        await crud.remove(id, entryOf('delete', entry.record, actor, requestId));
      } catch (err) {
        entry.removing = false;
        entries.set(id, entry);
        throw err;
      }
      return view(entry);
    },

    /** Marks it wanted and starts it; the promise settles when it is healthy (or gives up). */
    async start(id: string, actor: Actor, requestId: string): Promise<{ ready: Promise<void>; view: ServiceView }> {
      const entry = must(id);
      await setDesired(entry, 'running', 'start', actor, requestId);
      const ready = entry.instance.start();
      return { ready, view: view(entry) };
    },

    async restart(id: string, actor: Actor, requestId: string): Promise<{ ready: Promise<void>; view: ServiceView }> {
      const entry = must(id);
      await setDesired(entry, 'running', 'restart', actor, requestId);
      await entry.instance.stop();
      startable(entry);
      const ready = entry.instance.start();
      return { ready, view: view(entry) };
    },

    async stop(id: string, actor: Actor, requestId: string): Promise<ServiceView> {
      const entry = must(id);
      await setDesired(entry, 'stopped', 'stop', actor, requestId);
      await entry.instance.stop();
      return view(entry);
    },

    /** Stops every process (at shutdown); their records keep `desired`, so they start again with the service. */
    async close(): Promise<void> {
      closed = true;
      await Promise.all([...entries.values()].map((e) => e.instance.stop()));
      await writes;
    },
  };

  function nextId(): string {
    for (let n = 1; ; n++) {
      const id = `llamacpp-${n}`;
      if (!entries.has(id)) return id;
    }
  }
}

export type Services = ReturnType<typeof createServices>;
