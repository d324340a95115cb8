import { ServiceError } from '../../protocol/errors.ts';
import { readQuery } from '../../protocol/query.ts';
import { translatedFamilies } from '../../protocol/translation.ts';
import type { CatalogModel } from '../../protocol/catalog.ts';
import { route, type RouteDef } from '../http/router.ts';
import type { CatalogReader } from '../../protocol/ports/catalog.ts';
import type { SyntheticModels } from '../../protocol/ports/smart-route.ts';
import type { SyntheticModel } from '../../protocol/smart-route.ts';

// GET /v1/models: the styleA list by default; the styleB paginated list when the caller sends a styleB
// version header (real styleB clients send `anthropic-version` on every call).

const STYLE_B_PARAMS = ['limit', 'after_id', 'before_id'] as const;

/** A catalog model, or a preset or route pack (which carry their families and safe metadata along). */
type Listed = CatalogModel | SyntheticModel;
const isSynthetic = (m: Listed): m is SyntheticModel => 'meta' in m;
const extras = (m: Listed) =>
  isSynthetic(m) ? { display_name: m.displayName, families: m.families, switchyard: m.meta } : {};

/** The families a catalog model is reachable through only by protocol translation, when there are any. */
const translated = (m: Listed) => {
  if (isSynthetic(m)) return {};
  const families = translatedFamilies(m.families);
  return families.length === 0 ? {} : { translated_families: families };
};

const entryA = (m: Listed) => ({
  id: m.id,
  object: 'model',
  created: m.created ?? 0,
  owned_by: isSynthetic(m) ? 'switchyard' : m.providerId,
  ...extras(m),
  ...translated(m),
});
const entryB = (m: Listed) => ({
  type: 'model',
  id: m.id,
  display_name: m.displayName,
  created_at: new Date((m.created ?? 0) * 1000).toISOString(),
  ...extras(m),
  ...translated(m),
});
const wantsStyleB = (headers: Readonly<Record<string, string>>) =>
  headers['styleb-version'] !== undefined || headers['anthropic-version'] !== undefined;

function styleB(models: readonly Listed[], query: string) {
  const q = readQuery(query, STYLE_B_PARAMS);
  const limit = q.int('limit', 1, 1000, 20);
  const afterId = q.string('after_id', 1024);
  const beforeId = q.string('before_id', 1024);
  if (afterId !== undefined && beforeId !== undefined) {
    throw new ServiceError('INVALID_REQUEST', 'Use `after_id` or `before_id`, not both.', { param: 'before_id' });
  }
  const indexOf = (id: string, param: string) => {
    const i = models.findIndex((m) => m.id === id);
    if (i === -1) throw new ServiceError('INVALID_REQUEST', `\`${param}\` names no listed model.`, { param });
    return i;
  };
  let start: number;
  let end: number;
  let hasMore: boolean;
  if (beforeId !== undefined) {
    end = indexOf(beforeId, 'before_id');
    start = Math.max(0, end - limit);
    hasMore = start > 0;
  } else {
    start = afterId === undefined ? 0 : indexOf(afterId, 'after_id') + 1;
    end = Math.min(models.length, start + limit);
    hasMore = end < models.length;
  }
  const page = models.slice(start, end);
  return {
    data: page.map(entryB),
    has_more: hasMore,
    first_id: page[0]?.id ?? null,
    last_id: page.at(-1)?.id ?? null,
  };
}

/** A routable catalog model by its direct ID (not an alias: the answer's `id` is the one asked for). */
function directModel(catalog: CatalogReader, id: string): CatalogModel | undefined {
  const resolved = catalog.current().resolve(id);
  return resolved?.model.id === id ? resolved.model : undefined;
}

/** `synthetic` lists presets and route packs; they follow the catalog models, so pages stay stable. */
export function modelRoutes(catalog: CatalogReader, synthetic: SyntheticModels = () => []): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/models',
      scope: ['inference', 'read'],
      handle: async ({ req }) => {
        const models: Listed[] = [...catalog.current().discoverable(), ...(await synthetic())];
        if (wantsStyleB(req.headers)) return { body: styleB(models, req.query) };
        // limit, after_id and before_id only exist in the styleB shape.
        readQuery(req.query, []);
        return { body: { object: 'list', data: models.map(entryA) } };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/models/:id',
      scope: ['inference', 'read'],
      handle: async ({ req, params }) => {
        const id = params.id!;
        // A preset or route pack is served as the list shows it, and only while it is listed.
        const model: Listed | undefined = id.startsWith('@')
          ? (await synthetic()).find((m) => m.id === id)
          : directModel(catalog, id);
        if (model === undefined)
          throw new ServiceError('MODEL_NOT_FOUND', `No model \`${id.slice(0, 200)}\`.`, { param: 'model' });
        return { body: wantsStyleB(req.headers) ? entryB(model) : entryA(model) };
      },
    }),
  ];
}
