import type { RoutePackView } from '../protocol/http/route-packs.ts';
import type { StoreEnv } from './env.ts';
import { recordRepo } from './record-repo.ts';

/**
 * Route packs keyed by slug; the record is exactly what routes show. The slug is bounded before it gets
 * here: SLUG_SHAPE (63 characters) on create, an existing slug on update and delete.
 */
export interface RoutePackRepo {
  all(): RoutePackView[];
  get(slug: string): RoutePackView | undefined;
  stagePut(record: RoutePackView): void;
  stageRemove(slug: string): void;
}

export function routePackRepo(env: StoreEnv): RoutePackRepo {
  return recordRepo<RoutePackView>(env, 'route-packs', (p) => p.slug);
}
