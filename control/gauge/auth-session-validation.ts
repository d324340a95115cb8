import { ServiceError } from '../../protocol/errors.ts';
import { GAUGE_PROVIDERS } from '../../protocol/gauge-catalog.ts';
import { GAUGE_DEVICE_FLOW_PROVIDERS, type GaugeAuthSessionCreate } from '../../protocol/http/gauge-auth-sessions.ts';
import { withArticle } from '../../protocol/words.ts';
import type { GaugeService } from './service.ts';

// What an auth session is checked for before it starts: a Gauge provider that offers a device flow, and when it
// names an account, one of that provider and mode.

const bad = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

export function checkTarget(input: GaugeAuthSessionCreate, service: Pick<GaugeService, 'getAccount'>): void {
  if (!GAUGE_PROVIDERS.some((p) => p.id === input.providerId)) {
    throw bad(
      'providerId',
      `Gauge has no provider \`${input.providerId.slice(0, 160)}\`; see GET /v1/gauge/providers.`,
    );
  }
  if (!GAUGE_DEVICE_FLOW_PROVIDERS.includes(input.providerId) || input.authMode !== 'oauth_device') {
    throw bad(
      'authMode',
      `Auth sessions run device flows (\`oauth_device\`), which ${input.providerId} does not offer with ` +
        `\`${input.authMode}\`; connect it with POST /v1/gauge/accounts.`,
    );
  }
  if (input.accountId === undefined) return;
  const account = service.getAccount(input.accountId);
  if (account.providerId !== input.providerId || account.authMode !== input.authMode) {
    throw bad(
      'accountId',
      `Account \`${account.id}\` is ${withArticle(account.providerId ?? 'built-in')} \`${account.authMode}\` ` +
        `account; a session for ${input.providerId} \`${input.authMode}\` cannot update it.`,
    );
  }
}
