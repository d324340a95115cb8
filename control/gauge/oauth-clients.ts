import { ServiceError } from '../../protocol/errors.ts';
import type { GaugeOAuthClient, SettingsPatch } from '../../protocol/http/settings.ts';
import { checkBaseUrl } from './validation.ts';

// The authorization servers a device flow talks to, and the client a person registered for each (setting
// `gauge.oauthClients`). No client ID is bundled: the person registers an OAuth app with device flow enabled.

export interface DeviceFlowServer {
  /** Where /login/device/code and /login/oauth/access_token live unless the setting names another. */
  baseUrl: string;
  deviceCodePath: string;
  tokenPath: string;
  /** Scopes asked for; GitHub's quota endpoint reads the user's plan, which needs no repository access. */
  scope: string;
}

/** GitHub's device flow (docs.github.com, "Authorizing OAuth apps", device flow). */
export const DEVICE_FLOW_SERVERS: Readonly<Record<string, DeviceFlowServer>> = {
  'github-copilot': {
    baseUrl: 'https://github.com',
    deviceCodePath: '/login/device/code',
    tokenPath: '/login/oauth/access_token',
    scope: 'read:user',
  },
};

export interface ResolvedClient {
  clientId: string;
  base: URL;
  server: DeviceFlowServer;
}

const bad = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

type ClientsPatch = NonNullable<NonNullable<SettingsPatch['gauge']>['oauthClients']>;

/** The stored clients after a PATCH: an object replaces a provider's client, null removes it. */
export function mergeOAuthClients(
  current: Record<string, GaugeOAuthClient>,
  patch: ClientsPatch,
): Record<string, GaugeOAuthClient> {
  const next = { ...current };
  for (const [providerId, value] of Object.entries(patch) as [
    string,
    { clientId: string; baseUrl?: string | null } | null | undefined,
  ][]) {
    if (value === undefined) continue;
    if (value === null) {
      delete next[providerId];
      continue;
    }
    const baseUrl =
      value.baseUrl === undefined || value.baseUrl === null
        ? null
        : checkBaseUrl(value.baseUrl, `gauge.oauthClients.${providerId}.baseUrl`);
    next[providerId] = { clientId: value.clientId, baseUrl };
  }
  return next;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/**
 * The client to start a flow with, or a 400 that says which setting to set. In loopback-only mode (tests)
 * an authorization server elsewhere is refused, as the gauge worker refuses such sources.
 */
export function resolveClient(
  clients: Record<string, GaugeOAuthClient>,
  providerId: string,
  allowedHosts: 'any' | 'loopback',
): ResolvedClient {
  const server = DEVICE_FLOW_SERVERS[providerId];
  const client = Object.hasOwn(clients, providerId) ? clients[providerId] : undefined;
  if (server === undefined || client === undefined) {
    throw bad(
      'providerId',
      `No OAuth client is registered for ${providerId}: register an OAuth app with device flow enabled and set ` +
        `\`gauge.oauthClients.${providerId}.clientId\` with PATCH /v1/settings.`,
    );
  }
  const base = new URL(client.baseUrl ?? server.baseUrl);
  if (allowedHosts === 'loopback' && !LOOPBACK.has(base.hostname)) {
    throw bad(
      'providerId',
      `Only loopback hosts may be reached (SWITCHYARD_GAUGE_ALLOWED_HOSTS=loopback); set ` +
        `\`gauge.oauthClients.${providerId}.baseUrl\`.`,
    );
  }
  return { clientId: client.clientId, base, server };
}
