import type { CredentialRecord, ProviderRecord } from '../protocol/catalog.ts';
import { CREDENTIAL_ID_PREFIX, DEFAULT_CREDENTIAL_LABEL } from '../protocol/http/providers.ts';
import { derivedId } from '../protocol/ids.ts';
import type { StoreEnv } from './env.ts';
import { recordRepo } from './record-repo.ts';

export type { ProviderRecord };

/** A provider as stored before it could hold several keys: one vault reference, or none. */
export interface LegacyProviderRecord extends Omit<ProviderRecord, 'credentials'> {
  credentialRef: string | null;
}

/** Keyed by provider ID, bounded before it gets here: PROVIDER_ID (63 characters) on create, an existing ID after. */
export interface ProviderRepo {
  /** Every record in today's shape: one still stored in the older shape is read as upgradedRecord makes it. */
  all(): ProviderRecord[];
  get(id: string): ProviderRecord | undefined;
  /** The records still stored in the older shape (control/provider-upgrade.ts rewrites them at start). */
  legacy(): LegacyProviderRecord[];
  stagePut(record: ProviderRecord): void;
  stageRemove(id: string): void;
}

type Stored = ProviderRecord | LegacyProviderRecord;
const isLegacy = (r: Stored): r is LegacyProviderRecord => !Array.isArray((r as Partial<ProviderRecord>).credentials);

/**
 * An older record in today's shape: its one key becomes the credential `default`, whose ID is derived from the
 * provider's, so that every read of the record (and the upgrade's write) names the same credential.
 */
export function upgradedRecord(old: LegacyProviderRecord): ProviderRecord {
  const { credentialRef, ...rest } = old;
  const credentials: CredentialRecord[] =
    credentialRef === null || credentialRef === undefined
      ? []
      : [
          {
            id: derivedId(CREDENTIAL_ID_PREFIX, `provider:${old.id}`),
            label: DEFAULT_CREDENTIAL_LABEL,
            weight: 1,
            enabled: true,
            ref: credentialRef,
            rejectedAt: null,
            createdAt: old.updatedAt,
            updatedAt: old.updatedAt,
          },
        ];
  return { ...rest, credentials };
}

const current = (r: Stored): ProviderRecord => (isLegacy(r) ? upgradedRecord(r) : r);

export function providerRepo(env: StoreEnv): ProviderRepo {
  const repo = recordRepo<Stored>(env, 'providers', (r) => r.id);
  return {
    all: () => repo.all().map(current),
    get: (id) => {
      const r = repo.get(id);
      return r === undefined ? undefined : current(r);
    },
    legacy: () => repo.all().filter(isLegacy),
    stagePut: (record) => repo.stagePut(record),
    stageRemove: (id) => repo.stageRemove(id),
  };
}
