import type { Logger } from 'pino';
import type { HeldRoom } from './scheduler/residency.ts';
import { ServiceError } from '../protocol/errors.ts';
import type { Tuning } from '../protocol/http/settings.ts';
import type { ServiceCreate, ServiceView } from '../protocol/http/services.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import type { ServiceRecord, ServiceRepo } from '../store/service-repo.ts';
import type { ModelLibrary } from '../workers/runtime/library-watch.ts';
import type { Actor } from './actor.ts';
import { auditedCrud, type AuditEntry } from './crud.ts';
import type { EventBus } from './events.ts';
import type { Timing } from './llama-server-process.ts';
import { createServiceEntries, type Entry } from './service-entries.ts';
import { endLeftover } from './service-ports.ts';
import { embeddedView, serviceView } from './service-views.ts';
import { checkCreate } from './services-validation.ts';

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
  /** Takes the process's room in the local-model scheduler's budget before it starts (control/scheduler). */
  admit?(serviceId: string, model: string, tuning: Tuning): Promise<HeldRoom>;
}

const notFound = (id: string) =>
  new ServiceError('NOT_FOUND', `No service with ID \`${id.slice(0, 63)}\`.`, { param: 'id' });

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

export function createServices(deps: ServicesDeps) {
  const { entries, entryFor, written } = createServiceEntries(deps);
  let closed = false;
  const view = (entry: Entry): ServiceView => serviceView(entry, deps.tuning);
  const embedded = async (): Promise<ServiceView> =>
    embeddedView(EMBEDDED_SERVICE_ID, closed, deps.tuning(), await deps.embeddedLoaded());
  const crud = auditedCrud<ServiceRecord>({
    env: deps.env,
    audit: deps.audit,
    resourceType: 'service',
    repo: deps.repo,
    keyOf: (r) => r.id,
    notFound,
  });

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
      return [await embedded(), ...sorted.map(view)];
    },

    async get(id: string): Promise<ServiceView> {
      return id === EMBEDDED_SERVICE_ID ? embedded() : view(must(entries, id));
    },

    async create(input: ServiceCreate, actor: Actor, requestId: string): Promise<ServiceView> {
      if (entries.size >= MAX_SERVICES)
        throw new ServiceError('CONFLICT', `At most ${MAX_SERVICES} services may exist; delete one first.`);
      const id = input.id ?? nextId(entries);
      if (id === EMBEDDED_SERVICE_ID || entries.has(id))
        throw new ServiceError('CONFLICT', `A service with ID \`${id}\` exists already.`, { param: 'id' });
      const { binary, port } = await checkCreate(input, deps, entries);
      const record = newRecord(input, id, binary, port);
      await crud.create(record, entryOf('create', record, actor, requestId));
      const entry = entryFor(record);
      entries.set(id, entry);
      if (record.desired === 'running') entry.instance.start().catch(() => undefined);
      return view(entry);
    },

    async remove(id: string, actor: Actor, requestId: string): Promise<ServiceView> {
      const entry = must(entries, id);
      entry.removing = true;
      try {
        await entry.instance.stop();
        // Out of the map first, so no pid record of its last process is written after the removal.
        entries.delete(id);
        await written();
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
      const entry = must(entries, id);
      await setDesired(entry, 'running', 'start', actor, requestId);
      const ready = entry.instance.start();
      return { ready, view: view(entry) };
    },

    async restart(id: string, actor: Actor, requestId: string): Promise<{ ready: Promise<void>; view: ServiceView }> {
      const entry = must(entries, id);
      await setDesired(entry, 'running', 'restart', actor, requestId);
      await entry.instance.stop();
      startable(entry);
      const ready = entry.instance.start();
      return { ready, view: view(entry) };
    },

    async stop(id: string, actor: Actor, requestId: string): Promise<ServiceView> {
      const entry = must(entries, id);
      await setDesired(entry, 'stopped', 'stop', actor, requestId);
      await entry.instance.stop();
      return view(entry);
    },

    /** Stops every process (at shutdown); their records keep `desired`, so they start again with the service. */
    async close(): Promise<void> {
      closed = true;
      await Promise.all([...entries.values()].map((e) => e.instance.stop()));
      await written();
    },
  };

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
}

function must(entries: Map<string, Entry>, id: string): Entry {
  if (id === EMBEDDED_SERVICE_ID) {
    throw new ServiceError('CONFLICT', 'The embedded runtime runs inside the service: it starts and stops with it.', {
      param: 'id',
    });
  }
  const entry = id.length <= 63 ? entries.get(id) : undefined;
  if (!entry || entry.removing) throw notFound(id);
  return entry;
}

/** A removal that began meanwhile owns the process now: no start, stop or restart answers for it or runs it. */
function startable(entry: Entry): void {
  if (entry.removing) throw notFound(entry.record.id);
}

function nextId(entries: Map<string, Entry>): string {
  for (let n = 1; ; n++) {
    const id = `llamacpp-${n}`;
    if (!entries.has(id)) return id;
  }
}

function newRecord(input: ServiceCreate, id: string, binary: string | null, port: number): ServiceRecord {
  const now = Date.now();
  const autoStart = input.autoStart ?? true;
  return {
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
}

export type Services = ReturnType<typeof createServices>;
