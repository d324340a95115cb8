import type { ProviderRecord } from '../protocol/catalog.ts';
import type { StoreEnv } from './env.ts';
import { recordRepo } from './record-repo.ts';

export type { ProviderRecord };

/** Keyed by provider ID, bounded before it gets here: PROVIDER_ID (63 characters) on create, an existing ID after. */
export interface ProviderRepo {
  all(): ProviderRecord[];
  get(id: string): ProviderRecord | undefined;
  stagePut(record: ProviderRecord): void;
  stageRemove(id: string): void;
}

export function providerRepo(env: StoreEnv): ProviderRepo {
  return recordRepo<ProviderRecord>(env, 'providers', (r) => r.id);
}
