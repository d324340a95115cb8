import { DEFAULT_SETTINGS, type StoredSettings } from '../protocol/http/settings.ts';
import type { StoreEnv } from './env.ts';

const KEY = 'current';

export interface SettingsRepo {
  load(): StoredSettings;
  /** Stages the write inside the caller's transaction (see StoreEnv.commit). */
  stage(settings: StoredSettings): void;
}

/** Fields added in later versions fall back to their defaults for settings written before them. */
function withDefaults(saved: Partial<StoredSettings> | undefined): StoredSettings {
  const d = structuredClone(DEFAULT_SETTINGS);
  if (!saved) return d;
  return {
    bind: { ...d.bind, ...saved.bind },
    cors: { ...d.cors, ...saved.cors },
    runtime: { ...d.runtime, ...saved.runtime, tuning: { ...d.runtime.tuning, ...saved.runtime?.tuning } },
    usage: { ...d.usage, ...saved.usage },
    gauge: { ...d.gauge, ...saved.gauge },
    limits: { ...d.limits, ...saved.limits },
    routing: { ...d.routing, ...saved.routing },
    requestLog: { ...d.requestLog, ...saved.requestLog },
    traces: { ...d.traces, ...saved.traces },
  };
}

export function settingsRepo(env: StoreEnv): SettingsRepo {
  const db = env.db<StoredSettings>('settings');
  return {
    load: () => withDefaults(db.get(KEY)),
    stage: (settings) => void db.put(KEY, settings),
  };
}
