import type { RecordedRequest, Reply } from '../http.ts';
import { startGaugeFake, type GaugeFakeControls } from './shared.ts';

// GitHub's `GET /copilot_internal/user` as Copilot's editors and community quota tools read it (the endpoint is
// not in GitHub's REST reference): paid plans answer `quota_snapshots` and `quota_reset_date(_utc)`, the free
// plan `monthly_quotas` / `limited_user_quotas` / `limited_user_reset_date`. The REST API's own conventions
// apply: `Authorization: token <t>` (or Bearer), 401 `{"message": "Bad credentials", …}` for an unknown token,
// 404 for a token that may not see Copilot entitlements, a rate limit as 403 with `x-ratelimit-remaining: 0`.

export interface FakeSnapshot {
  entitlement: number;
  remaining: number;
  percent_remaining: number;
  unlimited: boolean;
  overage_count?: number;
  overage_permitted?: boolean;
}

export interface CopilotGaugeFake extends GaugeFakeControls {
  /** The whole answer body (use `paidUser` / `freeUser`, or any shape). */
  setUser(body: unknown): void;
}

const githubError = (status: number, message: string): Reply => ({
  status,
  body: { message, documentation_url: 'https://docs.github.com/rest', status: String(status) },
  headers: { 'x-github-request-id': 'C0DE:0000:FAKE:0001' },
});

export function paidUser(options: {
  snapshots: Partial<Record<'premium_interactions' | 'chat' | 'completions', FakeSnapshot>>;
  resetDate: string;
  tokenBasedBilling?: boolean;
}): Record<string, unknown> {
  const snapshots = Object.fromEntries(
    Object.entries(options.snapshots).map(([id, s]) => [
      id,
      {
        quota_id: id,
        overage_count: 0,
        overage_permitted: false,
        quota_remaining: s.remaining,
        timestamp_utc: '2026-11-24T14:59:00.000Z',
        ...s,
      },
    ]),
  );
  return {
    login: 'octo-sentinel-login',
    access_type_sku: 'copilot_pro',
    copilot_plan: 'individual_pro',
    assigned_date: '2026-01-02T03:04:05Z',
    chat_enabled: true,
    organization_login_list: ['sentinel-org'],
    token_based_billing: options.tokenBasedBilling ?? false,
    quota_reset_date: options.resetDate.slice(0, 10),
    quota_reset_date_utc: options.resetDate,
    quota_snapshots: snapshots,
  };
}

export function freeUser(options: {
  monthly: { chat: number; completions: number };
  left: { chat: number; completions: number };
  resetDate: string;
}): Record<string, unknown> {
  return {
    login: 'octo-sentinel-login',
    access_type_sku: 'free_limited_copilot',
    copilot_plan: 'individual',
    chat_enabled: true,
    monthly_quotas: options.monthly,
    limited_user_quotas: options.left,
    limited_user_reset_date: options.resetDate,
  };
}

function tokenOf(req: RecordedRequest): string | null {
  const match = /^(?:token|Bearer) (.+)$/.exec(String(req.headers.authorization ?? ''));
  return match?.[1] ?? null;
}

export async function startCopilotGaugeFake(options: {
  token: string;
  tokensWithoutCopilot?: string[];
}): Promise<CopilotGaugeFake> {
  let user: unknown = {};
  const fake = await startGaugeFake({
    prefix: '',
    authenticate(req) {
      const presented = tokenOf(req);
      if (presented === options.token) return null;
      if (presented !== null && options.tokensWithoutCopilot?.includes(presented)) return githubError(404, 'Not Found');
      return githubError(401, presented === null ? 'Requires authentication' : 'Bad credentials');
    },
    notFound: () => githubError(404, 'Not Found'),
    routes: {
      'GET /copilot_internal/user': () => ({ status: 200, body: user }),
    },
  });
  return Object.assign(fake, {
    setUser(body: unknown) {
      user = body;
    },
  });
}
