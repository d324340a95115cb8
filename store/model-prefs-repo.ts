import type { StoreEnv } from './env.ts';
import { boundedKey } from './keys.ts';

// What a person set for a local model's residency (docs/api.md, Local-model scheduler): pinned, and its own
// keep-alive. Keyed by the catalog model ID, which the route checked against the catalog first. A model with
// neither set has no record.

export interface ModelPrefs {
  modelId: string;
  /** The scheduler's unit (`embedded:<library name>`), kept so that pins hold before the catalog lists the model. */
  unit: string;
  pinned: boolean;
  /** Seconds a session keeps the model warm and the runtime keeps it loaded; null = `runtime.keepAliveSeconds`. */
  keepAliveSeconds: number | null;
  updatedAt: number;
}

export interface ModelPrefsRepo {
  all(): ModelPrefs[];
  get(modelId: string): ModelPrefs | undefined;
  /** Stages the write inside the caller's transaction (StoreEnv.commit); a record of defaults is removed. */
  stage(prefs: ModelPrefs): void;
}

export function modelPrefsRepo(env: StoreEnv): ModelPrefsRepo {
  const db = env.db<ModelPrefs>('model-prefs');
  return {
    all: () => [...db.getRange().map(({ value }) => value)],
    get: (modelId) => db.get(boundedKey(modelId)),
    stage(prefs) {
      const key = boundedKey(prefs.modelId);
      if (!prefs.pinned && prefs.keepAliveSeconds === null) void db.remove(key);
      else void db.put(key, prefs);
    },
  };
}
