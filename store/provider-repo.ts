import type { ProviderKind } from '../protocol/providers.ts';
import type { ProviderTimeouts } from '../protocol/http/providers.ts';
import type { StoreEnv } from './env.ts';
import { recordRepo } from './record-repo.ts';

export interface ProviderRecord {
  id: string;
  kind: ProviderKind;
  displayName: string;
  baseUrl: string | null;
  enabled: boolean;
  autoProxyModels: boolean;
  /** Opaque vault reference; never leaves the store and the edge's own memory. */
  credentialRef: string | null;
  hints: Record<string, string>;
  timeouts: ProviderTimeouts;
  createdAt: number;
  updatedAt: number;
}

/** Keyed by provider ID, bounded before it gets here: PROVIDER_ID (63 characters) on create, an existing ID after. */
export interface ProviderRepo {
  all(): ProviderRecord[];
  stagePut(record: ProviderRecord): void;
  stageRemove(id: string): void;
}

export function providerRepo(env: StoreEnv): ProviderRepo {
  return recordRepo<ProviderRecord>(env, 'providers', (r) => r.id);
}
