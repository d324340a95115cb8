import { createPairing, pairingOptionsFromEnv } from '../../control/pairing.ts';
import { createServiceAccounts } from '../../control/service-accounts.ts';
import { createTokenService } from '../../control/token-service.ts';
import { createAuthTable } from '../../state/auth-table.ts';
import { pairingRoutes } from '../../edge/routes/pairing.ts';
import { serviceAccountRoutes } from '../../edge/routes/service-accounts.ts';
import { tokenRoutes } from '../../edge/routes/tokens.ts';
import { metaRepo } from '../../store/meta-repo.ts';
import { serviceAccountRepo } from '../../store/service-account-repo.ts';
import { tokenRepo } from '../../store/token-repo.ts';
import type { Family } from '../family.ts';
import type { Parts } from '../parts.ts';
import { TOKENS_METHODS, type TokensPort } from '../../protocol/ports/tokens.ts';
import { SERVICE_ACCOUNTS_METHODS, type ServiceAccountsPort } from '../../protocol/ports/service-accounts.ts';

const LAST_USED_FLUSH_MS = 30_000;

/** Local tokens, service accounts and pairing; the bootstrap admin token on the first start. */
export async function tokensFamily(p: Parts): Promise<Family> {
  const { env, audit, log } = p;
  // The table this thread's edge authenticates against, fed by the token service as an edge thread's is.
  p.auth = createAuthTable();
  p.tokens = createTokenService({
    env,
    tokens: tokenRepo(env),
    meta: metaRepo(env),
    audit,
    tokenFile: p.tokenFile,
    serviceAccountExists: (id) => p.serviceAccounts.exists(id),
    localUses: () => p.auth.takeUses(),
  });
  const unfollow = p.tokens.followAuth((change) => p.auth.apply(change));
  p.serviceAccounts = createServiceAccounts({
    env,
    repo: serviceAccountRepo(env),
    audit,
    tokenCounts: () => p.tokens.ownerCounts(),
  });
  p.pairing = createPairing({ tokens: p.tokens, ...pairingOptionsFromEnv() });
  const bootstrap = await p.tokens.bootstrapIfEmpty();
  if (bootstrap) log.info({ tokenId: bootstrap.token.id }, 'created the bootstrap admin token');
  p.bootstrapSecret = bootstrap?.secret ?? null;

  let flushTimer: NodeJS.Timeout | undefined;
  return {
    routes: () => [
      ...tokenRoutes(p.control.port<TokensPort>('tokens', p.tokens, TOKENS_METHODS)),
      ...serviceAccountRoutes(
        p.control.port<ServiceAccountsPort>('service-accounts', p.serviceAccounts, SERVICE_ACCOUNTS_METHODS),
      ),
      ...pairingRoutes(p.pairing),
    ],
    ready() {
      flushTimer = setInterval(() => {
        p.tokens
          .flushLastUsed()
          .catch((err: unknown) => log.warn({ err: String(err) }, 'could not record token last use'));
      }, LAST_USED_FLUSH_MS);
      flushTimer.unref();
    },
    // A pairing request waits on its stream: end them, or the drain would wait its whole time on them.
    drain: () => p.pairing.close(),
    async close() {
      clearInterval(flushTimer);
      unfollow();
      await p.tokens.flushLastUsed().catch(() => undefined);
    },
  };
}
