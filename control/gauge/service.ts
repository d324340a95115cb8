import { ServiceError } from '../../protocol/errors.ts';
import {
  adapterOf,
  GAUGE_BUILT_IN_SOURCES,
  GAUGE_PROVIDERS,
  GAUGE_SESSION_ADAPTERS,
} from '../../protocol/gauge-catalog.ts';
import { redactText } from '../../protocol/gauge-redact.ts';
import type { GaugeAccountCreate, GaugeAccountUpdate, GaugeSourceUpdate } from '../../protocol/http/gauge.ts';
import { newId } from '../../protocol/ids.ts';
import type { AuditRepo } from '../../store/audit-repo.ts';
import type { StoreEnv } from '../../store/env.ts';
import type { GaugeDataRepo } from '../../store/gauge-data-repo.ts';
import type { GaugeSourceRecord, GaugeSourceRepo } from '../../store/gauge-source-repo.ts';
import type { Vault } from '../../store/vault/index.ts';
import type { GaugeActor } from '../../workers/gauge/actor.ts';
import type { Actor } from '../actor.ts';
import { checkCredentialRedirect } from '../credential-redirect.ts';
import { stageGaugeAudit, type GaugeAuditAction } from './audit.ts';
import { checkCredentialAllowed, checkId, mergeConfig } from './validation.ts';
import { gaugeDisabled, type GaugeSettings } from '../../protocol/gauge-sources.ts';
import { withArticle } from '../../protocol/words.ts';

// Gauge's state changes on the edge: accounts and sources (setup), history deletion and the refresh gate.
// Credentials go straight to the vault; records keep the reference; the worker is told to reread setup.

export type { GaugeSettings };

export interface GaugeServiceDeps {
  env: StoreEnv;
  sources: GaugeSourceRepo;
  data: GaugeDataRepo;
  vault: Pick<Vault, 'put' | 'delete'>;
  audit: AuditRepo;
  actor: Pick<GaugeActor, 'setupChanged' | 'refresh'>;
  settings(): GaugeSettings;
}

const notFound = (what: string, id: string, param = 'id') =>
  new ServiceError('NOT_FOUND', `No Gauge ${what} with ID \`${id.slice(0, 160)}\`.`, { param });

export { gaugeDisabled };

/** A Gauge account's key (or admin key) goes to `config.baseUrl`: moving it is moving the key. */
function checkRedirect(
  current: GaugeSourceRecord,
  next: GaugeSourceRecord,
  credential: string | null | undefined,
  mayRedirect: boolean,
): void {
  checkCredentialRedirect({
    hasCredential: current.credentialRef !== null,
    before: current.config.baseUrl,
    after: next.config.baseUrl,
    suppliesCredential: credential !== undefined,
    mayRedirect,
    param: 'config.baseUrl',
  });
}

/**
 * The most accounts Gauge keeps (the built-in sources aside): every one is polled on its schedule, and one
 * refresh may name at most GAUGE_LIMITS.refreshIdsMax (200) sources.
 */
export const MAX_GAUGE_ACCOUNTS = 200;

export function createGaugeService(deps: GaugeServiceDeps) {
  const { sources, data, vault, audit, actor } = deps;
  const defaults = new Map(GAUGE_BUILT_IN_SOURCES.map((s) => [s.id, s.config]));

  function mustGet(id: string, what: 'source' | 'account'): GaugeSourceRecord {
    const r = sources.get(checkId(id));
    if (!r) throw notFound(what, id);
    return r;
  }

  const commit = (...args: CommitArgs) => commitSource(deps, ...args);

  return {
    get: (id: string) => mustGet(id, 'source'),
    getAccount: (id: string) => mustGet(id, 'account'),

    /** `via` auth-session: the account an auth session creates with the credential it obtained. */
    async createAccount(
      input: GaugeAccountCreate,
      actorOf: Actor,
      requestId: string,
      via: 'accounts' | 'auth-session' = 'accounts',
    ): Promise<GaugeSourceRecord> {
      const adapter = accountAdapter(input, via, sources);
      const base = newAccount(input, adapter);
      base.config = mergeConfig(base, {}, input.config, {});
      return commit(base, undefined, input.credential, 'gauge-account.create', actorOf, requestId, {
        providerId: adapter.providerId,
        authMode: adapter.authMode,
        via,
      });
    },

    /** `mayRedirect`: the caller may send the stored credential to a new `config.baseUrl` (credential-redirect.ts). */
    async updateAccount(
      id: string,
      patch: GaugeAccountUpdate,
      actorOf: Actor,
      requestId: string,
      mayRedirect: boolean,
    ): Promise<GaugeSourceRecord> {
      const current = mustGet(id, 'account');
      checkCredentialAllowed(current, patch.credential);
      const next: GaugeSourceRecord = {
        ...current,
        label: patch.label === undefined ? current.label : redactText(patch.label),
        enabled: patch.enabled ?? current.enabled,
        config: mergeConfig(current, current.config, patch.config, defaults.get(current.id) ?? {}),
        updatedAt: Date.now(),
      };
      checkRedirect(current, next, patch.credential, mayRedirect);
      return commit(next, current, patch.credential, 'gauge-account.update', actorOf, requestId, {
        changedFields: Object.keys(patch).sort(),
      });
    },

    async removeAccount(id: string, actorOf: Actor, requestId: string): Promise<void> {
      const current = mustGet(id, 'account');
      if (current.builtIn) {
        throw new ServiceError(
          'INVALID_REQUEST',
          `\`${current.id}\` is built in: disable it with PUT /v1/gauge/sources/${current.id} instead.`,
          { param: 'id' },
        );
      }
      // The account, what Gauge collected for it and the audit record go in one transaction.
      let credentialRef = null as string | null;
      await data.removeSource(current.id, () => {
        // As stored: an update that committed after `current` was read may have replaced the credential.
        credentialRef = sources.get(current.id)?.credentialRef ?? null;
        sources.stageRemove(current.id);
        stageGaugeAudit(audit, 'gauge-account.delete', current.id, actorOf, requestId, {
          providerId: current.providerId ?? 'none',
        });
      });
      if (credentialRef !== null) await vault.delete(credentialRef).catch(() => undefined);
      actor.setupChanged();
    },

    async updateSource(
      id: string,
      patch: GaugeSourceUpdate,
      actorOf: Actor,
      requestId: string,
      mayRedirect: boolean,
    ): Promise<GaugeSourceRecord> {
      const current = mustGet(id, 'source');
      checkCredentialAllowed(current, patch.credential);
      const next: GaugeSourceRecord = {
        ...current,
        enabled: patch.enabled ?? current.enabled,
        config: mergeConfig(current, current.config, patch.config, defaults.get(current.id) ?? {}),
        updatedAt: Date.now(),
      };
      checkRedirect(current, next, patch.credential, mayRedirect);
      return commit(next, current, patch.credential, 'gauge-source.update', actorOf, requestId, {
        changedFields: Object.keys(patch).sort(),
      });
    },

    /** 404 for an unknown source, 409 for Gauge off, a disabled source or a refresh already running. */
    async refresh(sourceIds: string[] | undefined) {
      const all = sources.all();
      const ids = sourceIds ?? all.filter((s) => s.enabled).map((s) => s.id);
      checkRefresh(all, ids, () => deps.settings().enabled);
      return actor.refresh(ids);
    },

    async deleteHistory(sourceId: string | undefined, actorOf: Actor, requestId: string): Promise<number> {
      if (sourceId !== undefined && !sources.get(sourceId)) throw notFound('source', sourceId, 'sourceId');
      return data.removeHistory(sourceId ?? null, (removed) =>
        stageGaugeAudit(audit, 'gauge-history.delete', sourceId ?? '*', actorOf, requestId, {
          scope: sourceId === undefined ? 'all' : 'source',
          removed,
        }),
      );
    },
  };
}

type CommitArgs = [
  next: GaugeSourceRecord,
  previous: GaugeSourceRecord | undefined,
  credential: string | null | undefined,
  action: GaugeAuditAction,
  actorOf: Actor,
  requestId: string,
  metadata: Record<string, string | boolean | string[]>,
];

/** Writes the record and its audit line together; a new credential is stored first and dropped on failure. */
async function commitSource(
  { env, sources, vault, audit, actor }: Pick<GaugeServiceDeps, 'env' | 'sources' | 'vault' | 'audit' | 'actor'>,
  ...[next, previous, credential, action, actorOf, requestId, metadata]: CommitArgs
): Promise<GaugeSourceRecord> {
  const newRef = typeof credential === 'string' ? await vault.put(credential) : undefined;
  if (credential !== undefined) next.credentialRef = newRef ?? null;
  let stored: GaugeSourceRecord | undefined;
  try {
    stored = await env.commit(() => {
      // An update looks again, before it writes: a removal that committed since `previous` was read leaves
      // nothing to update, and the record must not come back.
      const now = previous && sources.get(next.id);
      if (previous && !now) throw notFound(action === 'gauge-source.update' ? 'source' : 'account', next.id);
      // The credential a racing update stored stays unless this one replaces it.
      if (credential === undefined && now) next.credentialRef = now.credentialRef;
      sources.stagePut(next);
      stageGaugeAudit(audit, action, next.id, actorOf, requestId, {
        ...metadata,
        credentialConfigured: next.credentialRef !== null,
      });
      return now;
    });
  } catch (err) {
    if (newRef !== undefined) await vault.delete(newRef).catch(() => undefined);
    throw err;
  }
  // The old secret goes only once nothing refers to it any more: the one the store held until this commit.
  if (stored?.credentialRef && stored.credentialRef !== next.credentialRef)
    await vault.delete(stored.credentialRef).catch(() => undefined);
  actor.setupChanged();
  return next;
}

/** The adapter that connects the account, checked against the accounts' cap. */
function accountAdapter(
  input: GaugeAccountCreate,
  via: 'accounts' | 'auth-session',
  sources: Pick<GaugeSourceRepo, 'all'>,
): NonNullable<ReturnType<typeof adapterOf>> {
  const adapter =
    via === 'accounts'
      ? adapterOf(input.providerId, input.authMode)
      : GAUGE_SESSION_ADAPTERS.find((a) => a.providerId === input.providerId && a.authMode === input.authMode);
  if (!adapter) {
    const known = GAUGE_PROVIDERS.some((p) => p.id === input.providerId);
    throw new ServiceError(
      'NOT_FOUND',
      known
        ? `Gauge cannot connect ${withArticle(input.providerId)} account with \`${input.authMode}\`.`
        : `Gauge has no provider \`${input.providerId.slice(0, 160)}\`; see GET /v1/gauge/providers.`,
      {
        param: known ? 'authMode' : 'providerId',
      },
    );
  }
  if (sources.all().filter((r) => r.kind === 'account').length >= MAX_GAUGE_ACCOUNTS) {
    throw new ServiceError('CONFLICT', `At most ${MAX_GAUGE_ACCOUNTS} Gauge accounts may exist; delete one first.`);
  }
  return adapter;
}

function newAccount(input: GaugeAccountCreate, adapter: NonNullable<ReturnType<typeof adapterOf>>): GaugeSourceRecord {
  const now = Date.now();
  return {
    id: newId('acct_', now),
    kind: 'account',
    collectorId: adapter.collectorId,
    providerId: adapter.providerId,
    authMode: adapter.authMode,
    label: redactText(input.label ?? GAUGE_PROVIDERS.find((p) => p.id === adapter.providerId)!.displayName),
    enabled: input.enabled ?? true,
    builtIn: false,
    credentialRef: null,
    config: {},
    createdAt: now,
    updatedAt: now,
  };
}

/** 404 for an unknown source, then 409 for Gauge off or a disabled source. */
function checkRefresh(all: readonly GaugeSourceRecord[], ids: readonly string[], enabled: () => boolean): void {
  for (const [i, id] of ids.entries()) {
    const s = all.find((r) => r.id === id);
    if (!s) throw notFound('source', id, `sourceIds[${i}]`);
  }
  if (!enabled()) throw gaugeDisabled();
  for (const [i, id] of ids.entries()) {
    if (!all.find((r) => r.id === id)!.enabled) {
      throw new ServiceError('CONFLICT', `Gauge source \`${id}\` is disabled; enable it before refreshing it.`, {
        param: `sourceIds[${i}]`,
      });
    }
  }
}

export type GaugeService = ReturnType<typeof createGaugeService>;
