import { randomBytes } from 'node:crypto';
import { startFake, type RecordedRequest, type Reply } from '../http.ts';

// GitHub's OAuth device flow (docs.github.com, "Authorizing OAuth apps", device flow; RFC 8628 sections 3.2,
// 3.4, 3.5): POST /login/device/code {client_id, scope} issues a 40-hex device code, an `XXXX-XXXX` user code,
// `verification_uri`, `expires_in` and `interval`; POST /login/oauth/access_token {client_id, device_code,
// grant_type=urn:ietf:params:oauth:grant-type:device_code} answers an error until the person acts, then
// {access_token, token_type: "bearer", scope}. Requests are form-encoded; answers are JSON when the client
// sends `Accept: application/json`, form-encoded otherwise. GitHub answers the flow's errors with HTTP 200
// (authorization_pending, slow_down with the new `interval`, expired_token, access_denied,
// incorrect_device_code, incorrect_client_credentials, unsupported_grant_type). The test plays the person:
// approve, deny or expire a grant by its user code.

export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const ERROR_URI = 'https://docs.github.com/developers/apps/authorizing-oauth-apps#error-codes-for-the-device-flow';
const DESCRIPTIONS: Record<string, string> = {
  authorization_pending: 'The authorization request is still pending.',
  slow_down: 'Too many requests have been made in the same timeframe.',
  expired_token: 'This device code has expired.',
  access_denied: 'The authorization request was denied.',
  incorrect_device_code: 'The device_code provided is not valid.',
  incorrect_client_credentials: 'The client_id and/or client_secret passed are incorrect.',
  unsupported_grant_type: 'The grant type is not supported.',
};

export interface DeviceGrant {
  deviceCode: string;
  userCode: string;
  /** Token requests answered for this grant. */
  polls: number;
  /** The grant's current interval in seconds (grows by 5 on each slow_down, as GitHub's does). */
  interval: number;
  outcome: 'pending' | 'approved' | 'denied' | 'expired' | 'used';
  token: string | null;
  /** slow_down answers still to give, each with an optional interval larger than GitHub's +5. */
  slowDowns: (number | null)[];
}

export interface OAuthDeviceFake {
  origin: string;
  requests: RecordedRequest[];
  grants: DeviceGrant[];
  grant(userCode: string): DeviceGrant;
  /** What the next device-code answers carry. */
  setIssue(options: { interval?: number; expiresIn?: number; extra?: Record<string, unknown> }): void;
  approve(userCode: string, token: string): void;
  deny(userCode: string): void;
  expire(userCode: string): void;
  /** The grant's next poll gets slow_down; `interval` reports a larger one than the usual +5. */
  slowDownNext(userCode: string, interval?: number): void;
  /** Resolves once the grant has been polled `n` times (each arrival checks: no polling); rejects after 10 s. */
  whenPolled(userCode: string, n: number): Promise<void>;
  /** The next request of any kind gets this answer. */
  failNext(status: number, body: unknown, headers?: Record<string, string>): void;
  close(): Promise<void>;
}

function answer(req: RecordedRequest, status: number, body: Record<string, unknown>): Reply {
  if (/application\/json/.test(String(req.headers.accept ?? ''))) return { status, body };
  const form = new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, String(v)])).toString();
  return { status, body: form, headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' } };
}

const oauthError = (req: RecordedRequest, error: string, extra: Record<string, unknown> = {}) =>
  answer(req, 200, { error, error_description: DESCRIPTIONS[error] ?? error, error_uri: ERROR_URI, ...extra });

function formOf(req: RecordedRequest): URLSearchParams | null {
  return /^application\/x-www-form-urlencoded/.test(String(req.headers['content-type'] ?? ''))
    ? new URLSearchParams(req.body)
    : null;
}

const hex40 = () => randomBytes(20).toString('hex');
const userCodeOf = (n: number) => `WDJB-${String(n).padStart(4, '0')}`;

export async function startOAuthDeviceFake(options: {
  clientId: string;
  deviceCodePrefix?: string;
}): Promise<OAuthDeviceFake> {
  const grants: DeviceGrant[] = [];
  const waiters: { grant: DeviceGrant; n: number; resolve: () => void }[] = [];
  let issue: { interval: number; expiresIn: number; extra: Record<string, unknown> } = {
    interval: 5,
    expiresIn: 900,
    extra: {},
  };
  let origin = '';

  const find = (userCode: string) => {
    const g = grants.find((x) => x.userCode === userCode);
    if (!g) throw new Error(`the fake issued no user code ${userCode}`);
    return g;
  };

  function polled(g: DeviceGrant): void {
    g.polls++;
    for (const w of [...waiters]) {
      if (w.grant === g && g.polls >= w.n) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  }

  function token(req: RecordedRequest): Reply {
    const form = formOf(req);
    if (form === null || form.get('grant_type') !== DEVICE_GRANT) return oauthError(req, 'unsupported_grant_type');
    if (form.get('client_id') !== options.clientId) return oauthError(req, 'incorrect_client_credentials');
    const g = grants.find((x) => x.deviceCode === form.get('device_code'));
    if (!g || g.outcome === 'used') return oauthError(req, 'incorrect_device_code');
    polled(g);
    if (g.outcome === 'denied') return oauthError(req, 'access_denied');
    if (g.outcome === 'expired') return oauthError(req, 'expired_token');
    const slow = g.slowDowns.shift();
    if (slow !== undefined) {
      g.interval = Math.max(g.interval + 5, slow ?? 0);
      return oauthError(req, 'slow_down', { interval: g.interval });
    }
    if (g.outcome === 'approved') {
      g.outcome = 'used';
      return answer(req, 200, { access_token: g.token, token_type: 'bearer', scope: 'read:user' });
    }
    return oauthError(req, 'authorization_pending');
  }

  const server = await startFake({
    notFound: () => ({ status: 404, body: 'Not Found', headers: { 'content-type': 'text/plain' } }),
    routes: {
      'POST /login/device/code': (req) => {
        const form = formOf(req);
        if (form === null || form.get('client_id') !== options.clientId)
          return oauthError(req, 'incorrect_client_credentials');
        const g: DeviceGrant = {
          deviceCode: (options.deviceCodePrefix ?? '') + hex40(),
          userCode: userCodeOf(grants.length + 1),
          polls: 0,
          interval: issue.interval,
          outcome: 'pending',
          token: null,
          slowDowns: [],
        };
        grants.push(g);
        return answer(req, 200, {
          device_code: g.deviceCode,
          user_code: g.userCode,
          verification_uri: `${origin}/login/device`,
          expires_in: issue.expiresIn,
          interval: issue.interval,
          ...issue.extra,
        });
      },
      'POST /login/oauth/access_token': token,
    },
  });
  origin = server.origin;

  return {
    origin,
    requests: server.requests,
    grants,
    grant: find,
    setIssue(next) {
      issue = {
        interval: next.interval ?? issue.interval,
        expiresIn: next.expiresIn ?? issue.expiresIn,
        extra: next.extra ?? {},
      };
    },
    approve(userCode, value) {
      Object.assign(find(userCode), { outcome: 'approved', token: value });
    },
    deny(userCode) {
      find(userCode).outcome = 'denied';
    },
    expire(userCode) {
      find(userCode).outcome = 'expired';
    },
    slowDownNext(userCode, interval) {
      find(userCode).slowDowns.push(interval ?? null);
    },
    whenPolled(userCode, n) {
      const g = find(userCode);
      if (g.polls >= n) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        // A session that stopped polling must fail its test, not hang the file.
        const timer = setTimeout(() => reject(new Error(`${userCode} was polled ${g.polls} times, not ${n}`)), 10_000);
        waiters.push({ grant: g, n, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
    failNext: server.failNext,
    close: server.close,
  };
}
