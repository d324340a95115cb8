import { createPairing, pairingOptionsFromEnv, type Pairing } from '../../control/pairing.ts';
import { createServiceAccounts, type ServiceAccounts } from '../../control/service-accounts.ts';
import { createTokenService, type TokenService } from '../../control/token-service.ts';
import { createAuthTable, type AuthTable } from '../../state/auth-table.ts';
import { pairingRoutes } from '../../edge/routes/pairing.ts';
import { serviceAccountRoutes } from '../../edge/routes/service-accounts.ts';
import { tokenRoutes } from '../../edge/routes/tokens.ts';
import { metaRepo } from '../../store/meta-repo.ts';
import { serviceAccountRepo } from '../../store/service-account-repo.ts';
import { tokenRepo } from '../../store/token-repo.ts';
import type { Built, Family } from '../family.ts';
import type { Base } from '../parts.ts';
import type { StoreParts } from './store.ts';
import { TOKENS_METHODS, type TokensPort } from '../../protocol/ports/tokens.ts';
import { SERVICE_ACCOUNTS_METHODS, type ServiceAccountsPort } from '../../protocol/ports/service-accounts.ts';

const LAST_USED_FLUSH_MS = 30_000;

export interface TokensParts {
  tokens: TokenService;
  /** What this thread's edge authenticates against (state/auth-table.ts), fed by `tokens`. */
  auth: AuthTable;
  serviceAccounts: ServiceAccounts;
  pairing: Pairing;
  bootstrapSecret: string | null;
}

/** Local tokens, service accounts and pairing; the bootstrap admin token on the first start. */
export async function tokensFamily(p: Base & StoreParts): Promise<Built<TokensParts>> {
  const { env, audit, log } = p;
  // The table this thread's edge authenticates against, fed by the token service as an edge thread's is.
  const auth = createAuthTable();
  const tokens = createTokenService({
    env,
    tokens: tokenRepo(env),
    meta: metaRepo(env),
    audit,
    tokenFile: p.tokenFile,
    serviceAccountExists: (id) => serviceAccounts.exists(id),
    localUses: () => auth.takeUses(),
  });
  const unfollow = tokens.followAuth((change) => auth.apply(change));
  const serviceAccounts = createServiceAccounts({
    env,
    repo: serviceAccountRepo(env),
    audit,
    tokenCounts: () => tokens.ownerCounts(),
  });
  const pairing = createPairing({ tokens, ...pairingOptionsFromEnv() });
  const bootstrap = await tokens.bootstrapIfEmpty();
  if (bootstrap) log.info({ tokenId: bootstrap.token.id }, 'created the bootstrap admin token');
  const bootstrapSecret = bootstrap?.secret ?? null;

  let flushTimer: NodeJS.Timeout | undefined;
  const family: Family = {
    routes: () => [
      ...tokenRoutes(p.control.port<TokensPort>('tokens', tokens, TOKENS_METHODS)),
      ...serviceAccountRoutes(
        p.control.port<ServiceAccountsPort>('service-accounts', serviceAccounts, SERVICE_ACCOUNTS_METHODS),
      ),
      ...pairingRoutes(pairing),
    ],
    ready() {
      flushTimer = setInterval(() => {
        tokens
          .flushLastUsed()
          .catch((err: unknown) => log.warn({ err: String(err) }, 'could not record token last use'));
      }, LAST_USED_FLUSH_MS);
      flushTimer.unref();
    },
    // A pairing request waits on its stream: end them, or the drain would wait its whole time on them.
    drain: () => pairing.close(),
    async close() {
      clearInterval(flushTimer);
      unfollow();
      await tokens.flushLastUsed().catch(() => undefined);
    },
  };
  return { family, parts: { tokens, auth, serviceAccounts, pairing, bootstrapSecret } };
}
