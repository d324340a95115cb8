import type { StoreEnv } from './env.ts';
import { recordRepo } from './record-repo.ts';

export interface ServiceAccountRecord {
  id: string;
  name: string;
  description: string | null;
  createdAt: number;
  updatedAt: number;
}

/** Keyed by the service-generated ID (`sa_` + ULID); a client's ID only reads an existing record. */
export interface ServiceAccountRepo {
  all(): ServiceAccountRecord[];
  get(id: string): ServiceAccountRecord | undefined;
  stagePut(record: ServiceAccountRecord): void;
  stageRemove(id: string): void;
}

export function serviceAccountRepo(env: StoreEnv): ServiceAccountRepo {
  return recordRepo<ServiceAccountRecord>(env, 'service-accounts', (r) => r.id);
}
