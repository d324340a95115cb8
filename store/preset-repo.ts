import type { PresetView } from '../protocol/http/presets.ts';
import type { StoreEnv } from './env.ts';
import { recordRepo } from './record-repo.ts';

/**
 * Presets keyed by slug; the record is exactly what routes show (nothing in it is secret). The slug is
 * bounded before it gets here: SLUG_SHAPE (63 characters) on create, an existing slug on update and delete.
 */
export interface PresetRepo {
  all(): PresetView[];
  get(slug: string): PresetView | undefined;
  stagePut(record: PresetView): void;
  stageRemove(slug: string): void;
}

export function presetRepo(env: StoreEnv): PresetRepo {
  return recordRepo<PresetView>(env, 'presets', (p) => p.slug);
}
