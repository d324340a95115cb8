import type { Logger } from 'pino';
import type { Actor } from '../../protocol/actor.ts';
import { ServiceError } from '../../protocol/errors.ts';
import type { HardwareTelemetry } from '../../protocol/http/hardware.ts';
import type {
  ModelPrefsView,
  ResidencyList,
  ResidencyPatch,
  ResidencyRow,
  WarmReasonView,
} from '../../protocol/http/residency.ts';
import type { StoredSettings } from '../../protocol/http/settings.ts';
import type { ResidencyPort } from '../../protocol/ports/runtime.ts';
import { embeddedIdsOf } from '../../state/loaded-models.ts';
import type { SchedulerMetrics } from '../../metrics/scheduler.ts';
import type { AuditRepo } from '../../store/audit-repo.ts';
import type { StoreEnv } from '../../store/env.ts';
import { modelPrefsRepo, type ModelPrefs, type ModelPrefsRepo } from '../../store/model-prefs-repo.ts';
import type { CatalogService } from '../catalog-service.ts';
import type { EventBus } from '../events.ts';
import { memoryBudget, type MemoryBudget } from './budget.ts';
import {
  createMemoryScheduler,
  type MemoryScheduler,
  type ResidencyView,
  type SchedulerClock,
} from './memory-scheduler.ts';
import { embeddedUnit } from './scheduled-runtime.ts';

// The service's one scheduler (docs/api.md, Local-model scheduler) with what it reads: the budget from the
// settings or the hardware, each model's pin and keep-alive from the store, the bus for its events. Units are
// `embedded:<library name>` (control/scheduler/scheduled-runtime.ts) and `llamacpp:<service ID>`; a person
// names a model by its catalog ID, which maps to its embedded unit.

export interface ResidencyDeps {
  env: StoreEnv;
  audit: AuditRepo;
  bus: EventBus;
  log: Logger;
  settings(): StoredSettings;
  catalog(): CatalogService;
  hardware: { telemetry(): Promise<HardwareTelemetry> };
  /** Unloads an embedded model by library name (the runtime pool's `unload` control). */
  unloadEmbedded(name: string): Promise<void>;
  /** A resident embedded model's idle keep-alive changed: the runtime arms it again (a `load` of the loaded model). */
  rearmEmbedded?(name: string): Promise<void>;
  metrics?: SchedulerMetrics;
  clock?: SchedulerClock;
}

export const serviceUnit = (serviceId: string) => `llamacpp:${serviceId}`;

/** A running llama-server's room: held until its process ends. */
export interface HeldRoom {
  end(): void;
}

const runtimeOf = (unit: string) => (unit.startsWith('llamacpp:') ? 'llamacpp' : 'embedded');
const nameOf = (unit: string) => unit.slice(unit.indexOf(':') + 1);

/** What the residency's functions below read: the store's prefs by unit, the budget and the scheduler. */
interface ResidencyState {
  readonly deps: ResidencyDeps;
  readonly repo: ModelPrefsRepo;
  readonly byUnit: Map<string, ModelPrefs>;
  readonly budget: MemoryBudget;
  readonly scheduler: MemoryScheduler;
}

export function createResidency(deps: ResidencyDeps) {
  const S: ResidencyState = {
    deps,
    repo: modelPrefsRepo(deps.env),
    byUnit: new Map<string, ModelPrefs>(),
    budget: memoryBudget(() => deps.settings().runtime.memoryBudgetBytes, deps.hardware),
    scheduler: createMemoryScheduler({
      budgetBytes: () => S.budget.bytes(),
      keepAliveMs: (unit) => keepAliveSeconds(S, unit) * 1000,
      queueSize: () => deps.settings().runtime.loadQueueSize,
      waitMs: () => deps.settings().runtime.loadWaitSeconds * 1000,
      async evict(unit) {
        if (runtimeOf(unit) === 'embedded') await deps.unloadEmbedded(nameOf(unit));
        else throw new Error('a running llama-server is not evicted');
      },
      onEvicted(unit, reason) {
        for (const modelId of modelIdsOf(S, unit)) deps.bus.publish('model.evicted', { modelId, reason });
        deps.log.info({ unit: unit.slice(0, 300), reason }, 'evicted a cold local model to make room');
      },
      onQueued(unit, position) {
        for (const modelId of modelIdsOf(S, unit)) deps.bus.publish('model.load_queued', { modelId, position });
      },
      metrics: {
        loaded: (unit) => deps.metrics?.loaded(runtimeOf(unit)),
        evicted: (unit, reason) => deps.metrics?.evicted(runtimeOf(unit), reason),
        queueWaitMs: (ms) => deps.metrics?.queueWaitMs(ms),
      },
      ...(deps.clock && { clock: deps.clock }),
    }),
  };
  S.deps.metrics?.reads(() => S.scheduler.memory());
  for (const prefs of S.repo.all()) {
    S.byUnit.set(prefs.unit, prefs);
    if (prefs.pinned) S.scheduler.pin(prefs.unit, true);
  }
  return {
    scheduler: S.scheduler,
    /** What the embedded runtime keeps `name` loaded for when idle: -1 while pinned. */
    keepAliveFor(name: string): number {
      const unit = embeddedUnit(name);
      return S.byUnit.get(unit)?.pinned ? -1 : keepAliveSeconds(S, unit);
    },
    /** Takes a running llama-server's room; released when its process ends. The first load asks the probe. */
    async admitService(serviceId: string, bytes: number): Promise<HeldRoom> {
      await S.budget.probe();
      const unit = serviceUnit(serviceId);
      const lease = await S.scheduler.admit(unit, bytes, { session: null });
      lease.loaded();
      let ended = false;
      return {
        end() {
          if (ended) return;
          ended = true;
          lease.release();
          S.scheduler.removed(unit);
        },
      };
    },
    /** Before an embedded load: the budget's hardware figure, once. */
    probe: () => S.budget.probe(),
    /** GET and PATCH /v1/runtime/residency (protocol/ports/runtime.ts ResidencyPort). */
    port: {
      list: async () => view(S),
      get: async (modelId: string) => ({ prefs: prefsOf(S, modelId), resident: row(S, modelId) }),
      async patch(modelId: string, body: ResidencyPatch, actor: Actor, requestId: string) {
        const prefs = await patch(S, modelId, body, actor, requestId);
        return { prefs, resident: row(S, modelId) };
      },
    } satisfies ResidencyPort,
    row: (modelId: string) => row(S, modelId),
    memory: () => memoryOf(S),
  };
}

function memoryOf(S: ResidencyState): ResidencyList['memory'] {
  return { ...S.scheduler.memory(), budgetSource: S.budget.source() };
}

function keepAliveSeconds(S: ResidencyState, unit: string): number {
  return S.byUnit.get(unit)?.keepAliveSeconds ?? S.deps.settings().runtime.keepAliveSeconds;
}

/** The embedded unit of catalog model `modelId`, or null when it is not an embedded provider's model. */
function unitOfModel(S: ResidencyState, modelId: string): string | null {
  const current = S.deps.catalog().current();
  const model = current.get(modelId);
  if (!model || current.provider(model.providerId)?.kind !== 'embedded') return null;
  return embeddedUnit(model.upstreamModelId);
}

function modelIdsOf(S: ResidencyState, unit: string): string[] {
  return runtimeOf(unit) === 'embedded' ? embeddedIdsOf(nameOf(unit), S.deps.catalog()) : [nameOf(unit)];
}

function view(S: ResidencyState): ResidencyList {
  return {
    memory: memoryOf(S),
    data: S.scheduler.residency().map((v) => rowOf(S, v)),
    prefs: [...S.byUnit.values()].map(prefsView).sort((a, b) => (a.modelId < b.modelId ? -1 : 1)),
  };
}

function rowOf(S: ResidencyState, v: ResidencyView): ResidencyRow {
  const runtime = runtimeOf(v.modelId);
  const warm: WarmReasonView[] = runtime === 'llamacpp' ? ['running'] : v.warm;
  return {
    modelIds: modelIdsOf(S, v.modelId),
    runtime,
    unit: nameOf(v.modelId),
    state: v.state,
    bytes: v.bytes,
    inFlight: runtime === 'llamacpp' ? 0 : v.inFlight,
    pinned: v.pinned,
    keepAliveSeconds: S.byUnit.get(v.modelId)?.keepAliveSeconds ?? null,
    warm,
    sessions: v.sessions.length,
    lastUseAt: new Date(v.lastUseAt).toISOString(),
    coldAt: v.coldAt === null ? null : new Date(v.coldAt).toISOString(),
  };
}

/** The row of catalog model `modelId` while it is resident, else null. */
function row(S: ResidencyState, modelId: string): ResidencyRow | null {
  const unit = unitOfModel(S, modelId);
  const v = unit === null ? undefined : S.scheduler.residency().find((r) => r.modelId === unit);
  return v === undefined ? null : rowOf(S, v);
}

function prefsView(p: ModelPrefs): ModelPrefsView {
  return { modelId: p.modelId, pinned: p.pinned, keepAliveSeconds: p.keepAliveSeconds };
}

/** `unit`: the model's, when the caller has looked it up already. */
function prefsOf(S: ResidencyState, modelId: string, unit = mustUnit(S, modelId)): ModelPrefsView {
  const stored = S.byUnit.get(unit);
  return { modelId, pinned: stored?.pinned ?? false, keepAliveSeconds: stored?.keepAliveSeconds ?? null };
}

function mustUnit(S: ResidencyState, modelId: string): string {
  const unit = unitOfModel(S, modelId);
  if (unit !== null) return unit;
  const known = S.deps.catalog().current().get(modelId) !== undefined;
  throw known
    ? new ServiceError(
        'INVALID_REQUEST',
        `\`${modelId.slice(0, 200)}\` is not a model of an \`embedded\` provider; the scheduler pins local models.`,
        { param: 'id' },
      )
    : new ServiceError('NOT_FOUND', `No catalog model with ID \`${modelId.slice(0, 200)}\`.`, { param: 'id' });
}

async function patch(
  S: ResidencyState,
  modelId: string,
  body: ResidencyPatch,
  actor: Actor,
  requestId: string,
): Promise<ModelPrefsView> {
  const unit = mustUnit(S, modelId);
  const before = prefsOf(S, modelId, unit);
  const next: ModelPrefs = {
    modelId,
    unit,
    pinned: body.pinned ?? before.pinned,
    keepAliveSeconds: body.keepAliveSeconds !== undefined ? body.keepAliveSeconds : before.keepAliveSeconds,
    updatedAt: Date.now(),
  };
  await S.deps.env.commit(() => {
    S.repo.stage(next);
    S.deps.audit.stageAppend({
      action: 'model.residency',
      resourceType: 'model',
      resourceId: modelId,
      ...actor,
      requestId,
      metadata: { changedFields: Object.keys(body).sort(), pinned: next.pinned },
    });
  });
  if (!next.pinned && next.keepAliveSeconds === null) S.byUnit.delete(unit);
  else S.byUnit.set(unit, next);
  S.scheduler.pin(unit, next.pinned);
  S.scheduler.recheck();
  // The runtime's idle timer was armed with the keep-alive of the model's last call: a pin must stop it now.
  if (S.deps.rearmEmbedded && S.scheduler.residency().some((r) => r.modelId === unit && r.state === 'resident'))
    await S.deps
      .rearmEmbedded(nameOf(unit))
      .catch((err: unknown) =>
        S.deps.log.warn({ unit: unit.slice(0, 300), err: String(err).slice(0, 300) }, 'could not re-arm a keep-alive'),
      );
  return prefsView(next);
}

export type Residency = ReturnType<typeof createResidency>;
