import { rename, rm, writeFile, open as openFile } from 'node:fs/promises';
import { ServiceError } from '../protocol/errors.ts';
import { newId } from '../protocol/ids.ts';
import { parseDateTime } from '../protocol/query.ts';
import { DEFAULT_TOKEN_SCOPES, type TokenCreate, type TokenUpdate, type TokenView } from '../protocol/http/tokens.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import type { MetaRepo } from '../store/meta-repo.ts';
import type { TokenRecord, TokenRepo } from '../store/token-repo.ts';
import type { Actor } from './actor.ts';
import { auditedCrud } from './crud.ts';
import { displayPrefix, generateTokenSecret, tokenHash } from '../protocol/token-secret.ts';
import type { AuthChange, AuthEntry } from '../state/auth-table.ts';
import type { AuthResult } from '../protocol/ports/tokens.ts';
import { createFollowers, type Follower } from '../state/followers.ts';

export type { AuthResult };

export interface TokenService {
  /**
   * Calls `listener` with the whole table of live tokens now, then with each change: what an edge thread
   * authenticates against (state/auth-table.ts). A create, change or revocation answers only once every
   * listener's promise (its table has the change: another thread's acknowledgement) has settled, so the next
   * request on any edge thread sees it. Returns the unsubscribe.
   */
  followAuth(listener: Follower<AuthChange>): () => void;
  /** Last uses an edge's table noted ([tokenId, ms]); shown at once, written with the next flush. */
  noteUses(uses: readonly (readonly [string, number])[]): void;
  list(): TokenView[];
  get(id: string): TokenView;
  create(input: TokenCreate, actor: Actor, requestId: string): Promise<{ token: TokenView; secret: string }>;
  update(id: string, patch: TokenUpdate, actor: Actor, requestId: string): Promise<TokenView>;
  revoke(id: string, actor: Actor, requestId: string): Promise<TokenView>;
  /** On first start with no token: an admin token whose secret goes to the token file. */
  bootstrapIfEmpty(): Promise<{ secret: string; token: TokenView } | null>;
  /** Writes pending last-use times; called on a timer and at shutdown. */
  flushLastUsed(): Promise<void>;
  /** Live tokens per owning service account. */
  ownerCounts(): Map<string, number>;
  /** The service account owning a live token; null for none or an unknown (revoked) token. */
  ownerOf(tokenId: string): string | null;
}

interface Deps {
  env: StoreEnv;
  tokens: TokenRepo;
  meta: MetaRepo;
  audit: AuditRepo;
  tokenFile: string;
  /** Whether a service account with this ID exists (late-bound: the accounts read this service's tokens). */
  serviceAccountExists?: (id: string) => boolean;
  /** The uses the edge in this thread noted since last asked, read before a token's last use is shown or written. */
  localUses?: () => [string, number][];
}

const authEntry = (r: TokenRecord): AuthEntry => ({
  tokenId: r.id,
  hash: r.hash,
  scopes: r.scopes,
  serviceAccountId: r.serviceAccountId,
  expiresAt: r.expiresAt,
});

/** Whether what authentication reads of a token changed (its last use is not part of it). */
const authChanged = (a: TokenRecord, b: TokenRecord) =>
  a.hash !== b.hash ||
  a.serviceAccountId !== b.serviceAccountId ||
  a.expiresAt !== b.expiresAt ||
  a.scopes.length !== b.scopes.length ||
  a.scopes.some((scope, i) => scope !== b.scopes[i]);

export function toTokenView(r: TokenRecord): TokenView {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    id: r.id,
    name: r.name,
    scopes: [...r.scopes],
    prefix: r.prefix,
    serviceAccountId: r.serviceAccountId,
    createdAt: new Date(r.createdAt).toISOString(),
    lastUsedAt: iso(r.lastUsedAt),
    expiresAt: iso(r.expiresAt),
  };
}

function parseExpiry(value: string | null | undefined, now: number): number | null {
  if (value === undefined || value === null) return null;
  const ms = parseDateTime(value);
  if (ms === null)
    throw new ServiceError('INVALID_REQUEST', '`expiresAt` must be an RFC 3339 date-time.', { param: 'expiresAt' });
  if (ms <= now)
    throw new ServiceError('INVALID_REQUEST', '`expiresAt` must be in the future.', { param: 'expiresAt' });
  return ms;
}

/** Written next to the store with 0600 from the first byte, then renamed into place. */
async function writeSecretFile(path: string, secret: string): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, secret + '\n', { mode: 0o600 });
  const handle = await openFile(tmp, 'r');
  await handle.sync();
  await handle.close();
  await rename(tmp, path);
}

export function createTokenService({
  env,
  tokens,
  meta,
  audit,
  tokenFile,
  serviceAccountExists = () => false,
  localUses,
}: Deps): TokenService {
  const auth = createTokenIndex(localUses);
  const { byId, pendingUse, index, noteUses, takeLocalUses, withUse } = auth;
  for (const r of tokens.all()) index(r);
  const crud = auditedCrud<TokenRecord>({
    env,
    audit,
    resourceType: 'token',
    repo: tokens,
    keyOf: (r) => r.id,
    notFound,
  });

  const mustGet = (id: string): TokenRecord => {
    const r = byId.get(id);
    if (!r) throw notFound(id);
    return r;
  };

  async function insert(
    record: TokenRecord,
    secret: string,
    actor: Actor,
    requestId: string | null,
    bootstrap: boolean,
  ) {
    await crud.create(
      record,
      insertEntry(record, actor, requestId, bootstrap),
      bootstrap ? () => meta.stageBootstrapTokenId(record.id) : undefined,
    );
    await index(record);
    return { token: toTokenView(record), secret };
  }

  return {
    followAuth: auth.follow,

    noteUses,

    list() {
      takeLocalUses();
      return [...byId.values()]
        .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id))
        .map((r) => withUse(r));
    },

    get(id) {
      takeLocalUses();
      return withUse(mustGet(id));
    },

    async create(input, actor, requestId) {
      const owner = input.serviceAccountId ?? null;
      checkOwner(owner, serviceAccountExists);
      const expiresAt = parseExpiry(input.expiresAt, Date.now());
      const { record, secret } = mint(input.name, input.scopes ?? DEFAULT_TOKEN_SCOPES, expiresAt, owner);
      return insert(record, secret, actor, requestId, false);
    },

    async update(id, patch, actor, requestId) {
      const current = mustGet(id);
      takeLocalUses();
      const next = patched(current, patch, pendingUse.get(id));
      // NOT_FOUND when a revocation committed since mustGet: the token is neither stored nor indexed again.
      await crud.update(next, {
        action: 'token.update',
        actor,
        requestId,
        metadata: { changedFields: Object.keys(patch).sort(), scopes: [...next.scopes] },
      });
      await index(next);
      return toTokenView(next);
    },

    async revoke(id, actor, requestId) {
      const current = mustGet(id);
      const wasBootstrap = meta.bootstrapTokenId() === id;
      await crud.remove(
        id,
        { action: 'token.revoke', actor, requestId, metadata: { name: current.name } },
        wasBootstrap ? () => meta.stageBootstrapTokenId(null) : undefined,
      );
      await auth.unindex(id);
      // The token file would otherwise keep handing out a dead secret.
      if (wasBootstrap) await rm(tokenFile, { force: true });
      return toTokenView(current);
    },

    async bootstrapIfEmpty() {
      if (byId.size > 0) return null;
      const { record, secret } = mint('bootstrap admin', ['admin'], null, null);
      const result = await insert(record, secret, { actorType: 'system', actorId: 'switchyard' }, null, true);
      await writeSecretFile(tokenFile, secret);
      return result;
    },

    ownerOf: (tokenId) => byId.get(tokenId)?.serviceAccountId ?? null,

    ownerCounts: () => countOwners(byId.values()),

    async flushLastUsed() {
      takeLocalUses();
      const batch = auth.takeUses();
      if (batch === null) return;
      await tokens.touch(batch);
    },
  };
}

const notFound = (id: string) => new ServiceError('NOT_FOUND', `No token with ID \`${id}\`.`, { param: 'id' });

/**
 * The tokens as authentication reads them, told to each follower as they change, and the last uses noted since
 * the last flush (the edge threads' and this thread's own).
 */
function createTokenIndex(localUses: Deps['localUses']) {
  const byId = new Map<string, TokenRecord>();
  const pendingUse = new Map<string, number>();
  const followers = createFollowers<AuthChange>();
  const noteUses = (uses: readonly (readonly [string, number])[]) => {
    for (const [id, at] of uses) if (byId.has(id) && at > (pendingUse.get(id) ?? 0)) pendingUse.set(id, at);
  };
  const index = (r: TokenRecord): Promise<void> | undefined => {
    const old = byId.get(r.id);
    byId.set(r.id, r);
    return old === undefined || authChanged(old, r) ? followers.tell({ put: [authEntry(r)], remove: [] }) : undefined;
  };
  return {
    byId,
    pendingUse,
    index,
    unindex(id: string): Promise<void> {
      byId.delete(id);
      pendingUse.delete(id);
      return followers.tell({ put: [], remove: [id] });
    },
    noteUses,
    takeLocalUses(): void {
      if (localUses) noteUses(localUses());
    },
    follow(listener: Follower<AuthChange>): () => void {
      listener({ whole: [...byId.values()].map(authEntry) });
      return followers.add(listener);
    },
    withUse(r: TokenRecord): TokenView {
      const used = pendingUse.get(r.id);
      return toTokenView(used === undefined ? r : { ...r, lastUsedAt: used });
    },
    /** The uses noted since the last take (null: none), already in the index. */
    takeUses(): Map<string, number> | null {
      if (pendingUse.size === 0) return null;
      const batch = new Map(pendingUse);
      pendingUse.clear();
      for (const [id, at] of batch) {
        const r = byId.get(id);
        if (r) index({ ...r, lastUsedAt: at });
      }
      return batch;
    },
  };
}

function mint(name: string, scopes: TokenRecord['scopes'], expiresAt: number | null, serviceAccountId: string | null) {
  const secret = generateTokenSecret();
  const now = Date.now();
  const record: TokenRecord = {
    id: newId('tok_', now),
    name,
    scopes,
    hash: tokenHash(secret)!,
    prefix: displayPrefix(secret),
    serviceAccountId,
    createdAt: now,
    lastUsedAt: null,
    expiresAt,
  };
  return { record, secret };
}

function insertEntry(record: TokenRecord, actor: Actor, requestId: string | null, bootstrap: boolean) {
  return {
    action: bootstrap ? ('token.bootstrap' as const) : ('token.create' as const),
    actor,
    requestId,
    metadata: {
      name: record.name,
      scopes: [...record.scopes],
      expires: record.expiresAt !== null,
      serviceAccountId: record.serviceAccountId,
    },
  };
}

function countOwners(records: Iterable<TokenRecord>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of records)
    if (r.serviceAccountId !== null) counts.set(r.serviceAccountId, (counts.get(r.serviceAccountId) ?? 0) + 1);
  return counts;
}

function checkOwner(owner: string | null, serviceAccountExists: (id: string) => boolean): void {
  if (owner !== null && !serviceAccountExists(owner)) {
    throw new ServiceError('INVALID_REQUEST', `No service account with ID \`${owner}\`.`, {
      param: 'serviceAccountId',
    });
  }
}

function patched(current: TokenRecord, patch: TokenUpdate, lastUsedAt: number | undefined): TokenRecord {
  return {
    ...current,
    ...(patch.name !== undefined && { name: patch.name }),
    ...(patch.scopes !== undefined && { scopes: patch.scopes }),
    ...(patch.expiresAt !== undefined && { expiresAt: parseExpiry(patch.expiresAt, Date.now()) }),
    lastUsedAt: lastUsedAt ?? current.lastUsedAt,
  };
}
