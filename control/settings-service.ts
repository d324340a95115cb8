import { statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { ServiceError } from '../protocol/errors.ts';
import {
  modelsDirectoryProblem,
  type SettingsPatch,
  type SettingsView,
  type StoredSettings,
} from '../protocol/http/settings.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import type { SettingsRepo } from '../store/settings-repo.ts';
import type { Actor } from './actor.ts';
import { auditedCrud } from './crud.ts';
import { normalizeOrigin } from '../protocol/origin.ts';
import { mergeOAuthClients } from './gauge/oauth-clients.ts';
import { mergeTraceSettings, traceSettingsView } from './traces/trace-settings.ts';

/** What the running listener actually is; settings can only change it across a restart. */
export interface ListenerInfo {
  host: string;
  port: number;
  networkExposed: boolean;
}

export interface SettingsService {
  current(): StoredSettings;
  view(): SettingsView;
  patch(patch: SettingsPatch, actor: Actor, requestId: string): Promise<SettingsView>;
}

interface Deps {
  env: StoreEnv;
  repo: SettingsRepo;
  audit: AuditRepo;
  listener: ListenerInfo;
  vault: SettingsView['vault'];
  /**
   * Called after each committed change, so hot state (CORS, limits) follows at once. It may answer a promise:
   * the change answers once that settles (every edge thread has the new settings).
   */
  onChange(settings: StoredSettings): unknown;
}

function normalizeOrigins(origins: string[]): string[] {
  const out: string[] = [];
  origins.forEach((value, i) => {
    const origin = normalizeOrigin(value);
    if (origin === null) {
      throw new ServiceError(
        'INVALID_REQUEST',
        `\`${value.slice(0, 200)}\` is not an origin (scheme://host[:port]) or "*".`,
        {
          param: `cors.allowedOrigins[${i}]`,
        },
      );
    }
    if (!out.includes(origin)) out.push(origin);
  });
  return out;
}

function merge(current: StoredSettings, patch: SettingsPatch): StoredSettings {
  const next = structuredClone(current);
  if (patch.bind?.networkExposed !== undefined) next.bind.networkExposed = patch.bind.networkExposed;
  if (patch.cors?.allowedOrigins !== undefined) next.cors.allowedOrigins = normalizeOrigins(patch.cors.allowedOrigins);
  if (patch.runtime?.modelsDirectory !== undefined) {
    const dir = patch.runtime.modelsDirectory;
    const problem =
      dir === null
        ? null
        : (modelsDirectoryProblem(dir) ??
          (!isAbsolute(dir)
            ? '`runtime.modelsDirectory` must be an absolute path.'
            : // Not created for the client (it may be a drive not mounted yet): a typo must not pass silently.
              isDirectory(dir)
              ? null
              : '`runtime.modelsDirectory` does not name an existing directory; create it first.'));
    if (problem !== null) throw new ServiceError('INVALID_REQUEST', problem, { param: 'runtime.modelsDirectory' });
    next.runtime.modelsDirectory = dir;
  }
  Object.assign(next.runtime.tuning, patch.runtime?.tuning);
  if (patch.runtime?.keepAliveSeconds !== undefined) next.runtime.keepAliveSeconds = patch.runtime.keepAliveSeconds;
  if (patch.runtime?.memoryBudgetBytes !== undefined) next.runtime.memoryBudgetBytes = patch.runtime.memoryBudgetBytes;
  if (patch.runtime?.loadQueueSize !== undefined) next.runtime.loadQueueSize = patch.runtime.loadQueueSize;
  if (patch.runtime?.loadWaitSeconds !== undefined) next.runtime.loadWaitSeconds = patch.runtime.loadWaitSeconds;
  Object.assign(next.usage, patch.usage);
  const { oauthClients, ...gauge } = patch.gauge ?? {};
  Object.assign(next.gauge, gauge);
  if (oauthClients !== undefined) next.gauge.oauthClients = mergeOAuthClients(next.gauge.oauthClients, oauthClients);
  Object.assign(next.limits, patch.limits);
  // Names of providers that do not exist (yet) are kept: a provider may be added after the order is set.
  if (patch.routing?.providerOrder !== undefined) next.routing.providerOrder = [...patch.routing.providerOrder];
  if (patch.routing?.sessionIdleMinutes !== undefined)
    next.routing.sessionIdleMinutes = patch.routing.sessionIdleMinutes;
  const { tokenIds, ...requestLog } = patch.requestLog ?? {};
  Object.assign(next.requestLog, requestLog);
  // A whole list, as providerOrder: IDs of tokens not created yet (or deleted) are kept, and match nothing.
  if (tokenIds !== undefined) next.requestLog.tokenIds = [...tokenIds];
  next.traces = mergeTraceSettings(next.traces, patch.traces);
  return next;
}

/** Dotted names of the leaves that differ; the audit record holds these names, never the values. */
function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

export function changedFields(a: unknown, b: unknown, prefix = ''): string[] {
  if (
    a !== null &&
    b !== null &&
    typeof a === 'object' &&
    typeof b === 'object' &&
    !Array.isArray(a) &&
    !Array.isArray(b)
  ) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys]
      .sort()
      .flatMap((k) =>
        changedFields(
          (a as Record<string, unknown>)[k],
          (b as Record<string, unknown>)[k],
          prefix ? `${prefix}.${k}` : k,
        ),
      );
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [prefix];
}

export function createSettingsService({ env, repo, audit, listener, vault, onChange }: Deps): SettingsService {
  let settings = repo.load();
  const crud = auditedCrud({ env, audit, resourceType: 'settings' });
  onChange(settings);

  const view = (): SettingsView => {
    const wanted = settings.bind.networkExposed;
    return {
      bind: {
        host: listener.host,
        port: listener.port,
        networkExposed: listener.networkExposed,
        pending: wanted === listener.networkExposed ? null : { networkExposed: wanted },
        restartRequired: wanted !== listener.networkExposed,
      },
      cors: { allowedOrigins: [...settings.cors.allowedOrigins], wildcard: settings.cors.allowedOrigins.includes('*') },
      runtime: structuredClone(settings.runtime),
      usage: { ...settings.usage },
      gauge: structuredClone(settings.gauge),
      limits: { ...settings.limits },
      routing: {
        providerOrder: [...settings.routing.providerOrder],
        sessionIdleMinutes: settings.routing.sessionIdleMinutes,
      },
      requestLog: { ...settings.requestLog, tokenIds: [...settings.requestLog.tokenIds] },
      traces: traceSettingsView(settings.traces),
      vault: { ...vault },
    };
  };

  return {
    current: () => settings,
    view,
    async patch(patch, actor, requestId) {
      const next = merge(settings, patch);
      const changed = changedFields(settings, next);
      await crud.commit(
        'settings',
        { action: 'settings.update', actor, requestId, metadata: { changedFields: changed } },
        () => repo.stage(next),
      );
      settings = next;
      await onChange(next);
      return view();
    },
  };
}
