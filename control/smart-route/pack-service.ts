import { ServiceError } from '../../protocol/errors.ts';
import { GENERATION_FAMILIES, type EndpointFamily } from '../../protocol/families.ts';
import {
  RETRY_CLASSES,
  type RoutePackCreate,
  type RoutePackUpdate,
  type RoutePackView,
} from '../../protocol/http/route-packs.ts';
import type { AuditRepo } from '../../store/audit-repo.ts';
import type { StoreEnv } from '../../store/env.ts';
import type { RoutePackRepo } from '../../store/route-pack-repo.ts';
import type { Actor } from '../actor.ts';
import { auditedCrud } from '../crud.ts';
import type { Catalog } from '../../protocol/catalog-entries.ts';
import { decide, packFamilies, type Decision, type Signals } from './decide.ts';
import type { UsablePack } from '../../protocol/smart-route.ts';
import { familyWordsAndId } from '../../protocol/words.ts';

export type { UsablePack };

export interface RoutePackService {
  list(): RoutePackView[];
  get(slug: string): RoutePackView;
  create(input: RoutePackCreate, actor: Actor, requestId: string): Promise<RoutePackView>;
  update(slug: string, patch: RoutePackUpdate, actor: Actor, requestId: string): Promise<RoutePackView>;
  remove(slug: string, actor: Actor, requestId: string): Promise<void>;
  /** Null for an unknown slug and for a pack whose fallback or any route cannot be routed now. */
  usable(slug: string): UsablePack | null;
  discoverable(): UsablePack[];
  /** What a request for `family` would try now; `family` defaults to the pack's first. */
  decide(slug: string, family?: EndpointFamily): Decision;
}

interface Deps {
  env: StoreEnv;
  packs: RoutePackRepo;
  audit: AuditRepo;
  catalog(): Catalog;
  signals: Signals;
}

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });
const bySlug = (a: { slug: string }, b: { slug: string }) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0);

/** A pack must be callable when written; later changes to the catalog make it unusable, not invalid. */
function checkPack(p: RoutePackView, catalog: Catalog): void {
  const seen = new Set<string>();
  p.routes.forEach((r, i) => {
    if (seen.has(r.id)) throw invalid(`routes[${i}].id`, `Route ID \`${r.id}\` appears twice.`);
    seen.add(r.id);
    if (!catalog.resolve(r.model))
      throw invalid(`routes[${i}].model`, `\`${r.model.slice(0, 200)}\` names no routable model or alias.`);
  });
  const fallback = catalog.resolve(p.fallback.model);
  if (!fallback)
    throw invalid('fallback.model', `\`${p.fallback.model.slice(0, 200)}\` names no routable model or alias.`);
  if (!fallback.model.families.some((f) => GENERATION_FAMILIES.includes(f))) {
    throw invalid(
      'fallback.model',
      `The fallback must serve one of ${GENERATION_FAMILIES.join(', ')}: a pack advertises what its fallback ` +
        `guarantees.`,
    );
  }
}

// Over 80 lines as a closure of short methods over one state, the shape of every control service here.
export function createRoutePackService({ env, packs, audit, catalog, signals }: Deps): RoutePackService {
  const cache = new Map(packs.all().map((p) => [p.slug, p]));
  const notFound = (slug: string) =>
    new ServiceError('NOT_FOUND', `No route pack \`${slug.slice(0, 100)}\`.`, { param: 'slug' });
  const crud = auditedCrud<RoutePackView>({
    env,
    audit,
    resourceType: 'route-pack',
    repo: packs,
    keyOf: (p) => p.slug,
    notFound,
  });

  const mustGet = (slug: string) => {
    const p = cache.get(slug);
    if (!p) throw notFound(slug);
    return p;
  };
  const usableOf = (pack: RoutePackView, now: Catalog): UsablePack | null => {
    const families = packFamilies(pack, now);
    return families === null ? null : { pack, families };
  };

  async function save(
    record: RoutePackView,
    action: 'route-pack.create' | 'route-pack.update',
    actor: Actor,
    requestId: string,
    changed: string[],
  ) {
    checkPack(record, catalog());
    const entry = {
      action,
      actor,
      requestId,
      metadata: { strategy: record.strategy, routeCount: record.routes.length, changedFields: changed },
    };
    await (action === 'route-pack.create' ? crud.create(record, entry) : crud.update(record, entry));
    cache.set(record.slug, record);
    return record;
  }

  return {
    list: () => [...cache.values()].sort(bySlug),
    get: mustGet,
    async create(input, actor, requestId) {
      if (cache.has(input.slug))
        throw new ServiceError('CONFLICT', `Route pack \`${input.slug}\` already exists.`, { param: 'slug' });
      const now = new Date().toISOString();
      const record: RoutePackView = {
        slug: input.slug,
        displayName: input.displayName ?? input.slug,
        strategy: input.strategy ?? 'ordered',
        routes: input.routes.map((r) => ({ id: r.id, model: r.model, weight: r.weight ?? 1 })),
        fallback: { model: input.fallback.model },
        retryOn: [...(input.retryOn ?? RETRY_CLASSES)],
        maxAttempts: input.maxAttempts ?? input.routes.length,
        createdAt: now,
        updatedAt: now,
      };
      return save(record, 'route-pack.create', actor, requestId, Object.keys(input).sort());
    },
    async update(slug, patch, actor, requestId) {
      const current = mustGet(slug);
      const next: RoutePackView = {
        ...current,
        ...(patch.displayName !== undefined && { displayName: patch.displayName }),
        ...(patch.strategy !== undefined && { strategy: patch.strategy }),
        ...(patch.routes !== undefined && {
          routes: patch.routes.map((r) => ({ id: r.id, model: r.model, weight: r.weight ?? 1 })),
        }),
        ...(patch.fallback !== undefined && { fallback: { model: patch.fallback.model } }),
        ...(patch.retryOn !== undefined && { retryOn: [...patch.retryOn] }),
        ...(patch.maxAttempts !== undefined && { maxAttempts: patch.maxAttempts }),
        updatedAt: new Date().toISOString(),
      };
      return save(next, 'route-pack.update', actor, requestId, Object.keys(patch).sort());
    },
    async remove(slug, actor, requestId) {
      mustGet(slug);
      await crud.remove(slug, { action: 'route-pack.delete', actor, requestId, metadata: {} });
      cache.delete(slug);
    },
    usable(slug) {
      const p = cache.get(slug);
      return p ? usableOf(p, catalog()) : null;
    },
    discoverable() {
      const now = catalog();
      return [...cache.values()]
        .sort(bySlug)
        .map((p) => usableOf(p, now))
        .filter((u): u is UsablePack => u !== null);
    },
    decide(slug, family) {
      const pack = mustGet(slug);
      const now = catalog();
      const families = packFamilies(pack, now);
      if (families === null) {
        throw new ServiceError(
          'CONFLICT',
          `Route pack \`${slug}\` targets a model that is hidden, disabled or gone; it does not resolve now.`,
          { param: 'slug' },
        );
      }
      const chosen = family ?? families[0]!;
      if (!families.includes(chosen))
        throw invalid('family', `Route pack \`${slug}\` serves ${families.map(familyWordsAndId).join(', ')}.`);
      return decide(pack, chosen, now, signals);
    },
  };
}
