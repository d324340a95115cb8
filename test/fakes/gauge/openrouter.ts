import { bearerOf, type Reply } from '../http.ts';
import { startGaugeFake, type GaugeFakeControls } from './shared.ts';

// OpenRouter's key and credits endpoints as its API reference documents them: `GET /api/v1/key` answers any
// valid key with `{data: {label, limit, limit_remaining, limit_reset, include_byok_in_limit, usage,
// usage_daily, usage_weekly, usage_monthly, byok_usage…, is_free_tier, is_management_key, …}}`;
// `GET /api/v1/credits` answers management keys only with `{data: {total_credits, total_usage}}`.

export interface FakeKeyData {
  limit: number | null;
  limit_remaining: number | null;
  limit_reset: string | null;
  usage: number;
  usage_daily: number;
  usage_weekly: number;
  usage_monthly: number;
  is_free_tier?: boolean;
}

export interface OpenRouterGaugeFake extends GaugeFakeControls {
  setKey(data: FakeKeyData): void;
  setCredits(totalCredits: number, totalUsage: number): void;
}

const orError = (status: number, message: string): Reply => ({ status, body: { error: { code: status, message } } });

export async function startOpenRouterGaugeFake(options: {
  apiKey: string;
  managementKey: string;
}): Promise<OpenRouterGaugeFake> {
  let key: FakeKeyData = {
    limit: null,
    limit_remaining: null,
    limit_reset: null,
    usage: 0,
    usage_daily: 0,
    usage_weekly: 0,
    usage_monthly: 0,
  };
  let credits = { total_credits: 0, total_usage: 0 };

  const isManagement = (presented: string | null) => presented === options.managementKey;
  const fake = await startGaugeFake({
    prefix: '/api/v1',
    authenticate(req) {
      const presented = bearerOf(req);
      if (presented === options.apiKey || isManagement(presented)) return null;
      return orError(401, presented === null ? 'No auth credentials found' : `User not found for key ${presented}`);
    },
    notFound: () => orError(404, 'Not Found'),
    routes: {
      'GET /api/v1/key': (req) => {
        const presented = bearerOf(req) ?? '';
        return {
          status: 200,
          body: {
            data: {
              label: `${presented.slice(0, 11)}...${presented.slice(-3)}`,
              ...key,
              include_byok_in_limit: false,
              byok_usage: 0,
              byok_usage_daily: 0,
              byok_usage_weekly: 0,
              byok_usage_monthly: 0,
              is_free_tier: key.is_free_tier ?? false,
              is_management_key: isManagement(presented),
              is_provisioning_key: isManagement(presented),
              creator_user_id: 'user_2dHFtVWx2n56w6HkM0000000000',
              expires_at: null,
              rate_limit: { requests: -1, interval: '10s', note: 'This field is deprecated and safe to ignore.' },
            },
          },
        };
      },
      'GET /api/v1/credits': (req) => {
        if (!isManagement(bearerOf(req))) return orError(403, 'Only management keys can perform this operation');
        return { status: 200, body: { data: credits } };
      },
    },
  });
  return Object.assign(fake, {
    setKey(data: FakeKeyData) {
      key = data;
    },
    setCredits(totalCredits: number, totalUsage: number) {
      credits = { total_credits: totalCredits, total_usage: totalUsage };
    },
  });
}
