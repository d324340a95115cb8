import { createSettingsService, type ListenerInfo, type SettingsService } from '../../control/settings-service.ts';
import { defaultBodyBudget } from '../../edge/http/body-budget.ts';
import { corsPolicy } from '../../edge/http/cors.ts';
import { settingsRoutes } from '../../edge/routes/settings.ts';
import { settingsRepo } from '../../store/settings-repo.ts';
import type { StoredSettings } from '../../protocol/http/settings.ts';
import type { Built } from '../family.ts';
import type { Base, EdgeConfig } from '../parts.ts';
import type { StoreParts } from './store.ts';
import { SETTINGS_METHODS, type SettingsPort } from '../../protocol/ports/settings.ts';
import { createFollowers } from '../../state/followers.ts';

export interface SettingsParts {
  settings: SettingsService;
  listener: ListenerInfo;
  edgeConfig: EdgeConfig;
  /** Calls `follow` with the settings now and after each change. */
  followSettings(follow: (next: StoredSettings) => unknown): () => void;
}

/** The settings, the listener they describe, and what the edge reads of them on each request. */
export function settingsFamily(p: Base & StoreParts, port: number): Built<SettingsParts> {
  const { env, audit, log, vault } = p;
  const saved = settingsRepo(env).load();
  const listener: ListenerInfo = {
    host: saved.bind.networkExposed ? '0.0.0.0' : '127.0.0.1',
    port,
    networkExposed: saved.bind.networkExposed,
  };
  const autoBodyBudget = defaultBodyBudget();
  const followers = createFollowers<StoredSettings>();
  const edge: EdgeConfig = {
    cors: corsPolicy([]),
    jsonBodyLimit: saved.limits.jsonBodyBytes,
    multipartBodyLimit: saved.limits.multipartBodyBytes,
    bodyBudgetLimit: saved.limits.inflightBodyBytes ?? autoBodyBudget,
  };
  const settings = createSettingsService({
    env,
    repo: settingsRepo(env),
    audit,
    listener,
    // Read at each GET: the file vault's key storage is known only once its file exists.
    vault: {
      get backend() {
        return vault.info.backend;
      },
      get keyStorage() {
        return vault.info.keyStorage;
      },
      get reason() {
        return vault.info.fileReason ?? null;
      },
    },
    onChange(next) {
      const wasWildcard = edge.cors.wildcard;
      edge.cors = corsPolicy(next.cors.allowedOrigins);
      if (edge.cors.wildcard && !wasWildcard) {
        log.warn(
          'cors.allowedOrigins holds "*": any web page may now try authenticated requests; list origins instead',
        );
      }
      edge.jsonBodyLimit = next.limits.jsonBodyBytes;
      edge.multipartBodyLimit = next.limits.multipartBodyBytes;
      edge.bodyBudgetLimit = next.limits.inflightBodyBytes ?? autoBodyBudget;
      return followers.tell(next);
    },
  });
  // Later families follow the settings from their own start: with what holds now, then with each change.
  const followSettings: SettingsParts['followSettings'] = (follow) => {
    const unfollow = followers.add(follow);
    follow(settings.current());
    return unfollow;
  };
  return {
    family: { routes: () => [...settingsRoutes(p.control.port<SettingsPort>('settings', settings, SETTINGS_METHODS))] },
    parts: { settings, listener, edgeConfig: edge, followSettings },
  };
}
