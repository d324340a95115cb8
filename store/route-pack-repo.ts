import type { RoutePackView } from '../protocol/http/route-packs.ts';
import type { StoreEnv } from './env.ts';

/**
 * Route packs keyed by slug; the record is exactly what routes show. The slug is bounded before it gets
 * here: SLUG_SHAPE (63 characters) on create, an existing slug on update and delete.
 */
export interface RoutePackRepo {
  all(): RoutePackView[];
  stagePut(record: RoutePackView): void;
  stageRemove(slug: string): void;
}

export function routePackRepo(env: StoreEnv): RoutePackRepo {
  const db = env.db<RoutePackView>('route-packs');
  return {
    all: () => [...db.getRange().map(({ value }) => value)],
    stagePut: (record) => void db.put(record.slug, record),
    stageRemove: (slug) => void db.remove(slug),
  };
}
