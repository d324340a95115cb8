import type { Tuning } from '../protocol/http/settings.ts';
import type { StoreEnv } from './env.ts';
import { recordRepo } from './record-repo.ts';

/** A supervised llama-server. The embedded runtime has no record: it is part of the service. */
export interface ServiceRecord {
  id: string;
  kind: 'llamacpp';
  displayName: string;
  /** A library name (relative to runtime.modelsDirectory). */
  model: string;
  tuning: Partial<Tuning>;
  port: number;
  /** A configured executable; null: the first llama-server on PATH at each start. Never leaves the edge. */
  binary: string | null;
  desired: 'running' | 'stopped';
  /**
   * The process last spawned, so that one left behind by a service that was killed (no orderly stop) is
   * ended at the next start rather than left holding the port.
   */
  pid: number | null;
  createdAt: number;
  updatedAt: number;
}

/** Keyed by the service ID (`[a-z0-9][a-z0-9-]{0,62}`, checked before it gets here). */
export interface ServiceRepo {
  all(): ServiceRecord[];
  get(id: string): ServiceRecord | undefined;
  stagePut(record: ServiceRecord): void;
  stageRemove(id: string): void;
}

export function serviceRepo(env: StoreEnv): ServiceRepo {
  return recordRepo<ServiceRecord>(env, 'services', (r) => r.id);
}
