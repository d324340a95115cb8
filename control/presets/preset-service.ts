import { ServiceError } from '../../protocol/errors.ts';
import type { PresetCreate, PresetUpdate, PresetView } from '../../protocol/http/presets.ts';
import type { AuditRepo } from '../../store/audit-repo.ts';
import type { StoreEnv } from '../../store/env.ts';
import type { PresetRepo } from '../../store/preset-repo.ts';
import type { Actor } from '../actor.ts';
import { auditedCrud } from '../crud.ts';
import type { Catalog } from '../../protocol/catalog-entries.ts';
import { checkPreset, usablePreset, type UsablePreset } from './check.ts';

export interface PresetService {
  list(): PresetView[];
  get(slug: string): PresetView;
  /** Runs every check a create runs except the slug conflict; saves nothing. */
  validate(input: PresetCreate): void;
  create(input: PresetCreate, actor: Actor, requestId: string): Promise<PresetView>;
  update(slug: string, patch: PresetUpdate, actor: Actor, requestId: string): Promise<PresetView>;
  remove(slug: string, actor: Actor, requestId: string): Promise<void>;
  /** Null for an unknown slug and for a preset whose target cannot be routed now. */
  usable(slug: string): UsablePreset | null;
  /** Every usable preset, by slug. */
  discoverable(): UsablePreset[];
}

interface Deps {
  env: StoreEnv;
  presets: PresetRepo;
  audit: AuditRepo;
  catalog(): Catalog;
}

const bySlug = (a: { slug: string }, b: { slug: string }) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0);

/** A new preset from its create body, defaults filled in. */
function fromInput(input: PresetCreate, now: string): PresetView {
  return {
    slug: input.slug,
    displayName: input.displayName ?? input.slug,
    model: input.model,
    parameters: input.parameters ?? {},
    system: input.system ?? null,
    familyScope: [...input.familyScope],
    createdAt: now,
    updatedAt: now,
  };
}

function patched(current: PresetView, patch: Parameters<PresetService['update']>[1]): PresetView {
  return {
    ...current,
    ...(patch.displayName !== undefined && { displayName: patch.displayName }),
    ...(patch.model !== undefined && { model: patch.model }),
    ...(patch.parameters !== undefined && { parameters: patch.parameters }),
    ...(patch.system !== undefined && { system: patch.system }),
    ...(patch.familyScope !== undefined && { familyScope: [...patch.familyScope] }),
    updatedAt: new Date().toISOString(),
  };
}

// Every preset is held in memory (read-mostly and tiny): resolution on the request path never touches the store.
export function createPresetService({ env, presets, audit, catalog }: Deps): PresetService {
  const cache = new Map(presets.all().map((p) => [p.slug, p]));
  const notFound = (slug: string) =>
    new ServiceError('NOT_FOUND', `No preset \`${slug.slice(0, 100)}\`.`, { param: 'slug' });
  const crud = auditedCrud<PresetView>({
    env,
    audit,
    resourceType: 'preset',
    repo: presets,
    keyOf: (p) => p.slug,
    notFound,
  });

  const mustGet = (slug: string) => {
    const p = cache.get(slug);
    if (!p) throw notFound(slug);
    return p;
  };

  async function save(
    record: PresetView,
    action: 'preset.create' | 'preset.update',
    actor: Actor,
    requestId: string,
    changed: string[],
  ) {
    const entry = { action, actor, requestId, metadata: { model: record.model, changedFields: changed } };
    await (action === 'preset.create' ? crud.create(record, entry) : crud.update(record, entry));
    cache.set(record.slug, record);
    return record;
  }

  return {
    list: () => [...cache.values()].sort(bySlug),
    get: mustGet,
    validate(input) {
      checkPreset(fromInput(input, ''), catalog());
    },
    async create(input, actor, requestId) {
      const record = fromInput(input, new Date().toISOString());
      if (record.slug === 'validate')
        throw new ServiceError('INVALID_REQUEST', '`validate` is reserved by POST /v1/presets/validate.', {
          param: 'slug',
        });
      checkPreset(record, catalog());
      if (cache.has(record.slug))
        throw new ServiceError('CONFLICT', `Preset \`${record.slug}\` already exists.`, { param: 'slug' });
      return save(record, 'preset.create', actor, requestId, Object.keys(input).sort());
    },
    async update(slug, patch, actor, requestId) {
      const next = patched(mustGet(slug), patch);
      checkPreset(next, catalog());
      return save(next, 'preset.update', actor, requestId, Object.keys(patch).sort());
    },
    async remove(slug, actor, requestId) {
      const current = mustGet(slug);
      await crud.remove(slug, { action: 'preset.delete', actor, requestId, metadata: { model: current.model } });
      cache.delete(slug);
    },
    usable(slug) {
      const p = cache.get(slug);
      return p ? usablePreset(p, catalog()) : null;
    },
    discoverable() {
      const now = catalog();
      return [...cache.values()]
        .sort(bySlug)
        .map((p) => usablePreset(p, now))
        .filter((u): u is UsablePreset => u !== null);
    },
  };
}
