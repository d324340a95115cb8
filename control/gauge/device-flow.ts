import { request } from 'undici';
import { readText } from '../../workers/shared/read-text.ts';
import type { ResolvedClient } from './oauth-clients.ts';

// The two requests of an RFC 8628 device flow as GitHub serves them: POST /login/device/code and POST
// /login/oauth/access_token, form-encoded, asking for JSON. Every field of an answer is checked before it is
// used; anything unexpected becomes a kind, never a throw, so no answer can crash the service. GitHub answers
// the flow's errors (authorization_pending, slow_down, ...) with HTTP 200; RFC 8628 servers with 400: both
// are read the same way.

/** A device-code or token answer is a few hundred bytes; far more than that is not one. */
const MAX_ANSWER_BYTES = 64 * 1024;
const REQUEST_TIMEOUT_MS = 15_000;
export const DEVICE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';
/** RFC 8628 section 3.2: without `interval`, poll every 5 s. */
const DEFAULT_INTERVAL_S = 5;
export const MAX_INTERVAL_S = 300;
export const MAX_EXPIRES_IN_S = 3600;

const DEVICE_CODE = /^[\x21-\x7e]{1,1024}$/;
const USER_CODE = /^[\x21-\x7e](?:[\x20-\x7e]{0,62}[\x21-\x7e])?$/;
/** Tokens go into an Authorization header later: printable ASCII only (as the collectors require). */
const ACCESS_TOKEN = /^[\x21-\x7e]{1,4096}$/;
/** OAuth error codes are short ASCII words (RFC 6749 section 5.2); anything else is not repeated. */
const ERROR_CODE = /^[a-z0-9_]{1,64}$/;

export interface DeviceCodes {
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  verificationUriComplete: string | null;
  expiresIn: number;
  interval: number;
}

export type DeviceCodeAnswer =
  | { kind: 'codes'; codes: DeviceCodes }
  | { kind: 'refused'; error: string | null }
  | { kind: 'unreachable' }
  | { kind: 'malformed' };

export type PollAnswer =
  | { kind: 'token'; accessToken: string }
  | { kind: 'pending' }
  | { kind: 'slow_down'; interval: number | null }
  | { kind: 'denied' }
  | { kind: 'expired' }
  | { kind: 'refused'; error: string | null }
  | { kind: 'transient' }
  | { kind: 'malformed' };

type Raw = { kind: 'answer'; status: number; json: Record<string, unknown> | null } | { kind: 'unreachable' };

async function postForm(url: URL, form: Record<string, string>, signal: AbortSignal): Promise<Raw> {
  try {
    const res = await request(url, {
      method: 'POST',
      headers: {
        accept: 'application/json',
        'content-type': 'application/x-www-form-urlencoded',
        'user-agent': 'switchyard-gauge',
      },
      body: new URLSearchParams(form).toString(),
      signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
    });
    const { text, complete } = await readText(res.body, MAX_ANSWER_BYTES);
    let json: unknown = null;
    if (complete) {
      try {
        json = JSON.parse(text);
      } catch {
        json = null;
      }
    }
    const object =
      typeof json === 'object' && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : null;
    return { kind: 'answer', status: res.statusCode, json: object };
  } catch {
    // Refused connections, resets, time-outs and aborts alike: the caller retries or has stopped.
    return { kind: 'unreachable' };
  }
}

const errorOf = (json: Record<string, unknown>): string | null | undefined => {
  if (!Object.hasOwn(json, 'error')) return undefined;
  return typeof json.error === 'string' && ERROR_CODE.test(json.error) ? json.error : null;
};

const intIn = (value: unknown, min: number, max: number): number | null =>
  typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max ? value : null;

/**
 * A verification URI is shown to a person who will type a code there: https, or the configured server's own
 * origin (GitHub Enterprise over http, a loopback test fake); never user info; bounded.
 */
export function checkVerificationUri(value: unknown, base: URL): string | null {
  if (typeof value !== 'string' || value.length > 2048) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.username !== '' || url.password !== '') return null;
  if (url.protocol === 'https:' || (url.protocol === 'http:' && url.origin === base.origin)) return url.href;
  return null;
}

export function parseDeviceCodes(json: Record<string, unknown>, base: URL): DeviceCodes | null {
  const { device_code: deviceCode, user_code: userCode } = json;
  if (typeof deviceCode !== 'string' || !DEVICE_CODE.test(deviceCode)) return null;
  if (typeof userCode !== 'string' || !USER_CODE.test(userCode)) return null;
  const verificationUri = checkVerificationUri(json.verification_uri, base);
  if (verificationUri === null) return null;
  let verificationUriComplete: string | null = null;
  if (json.verification_uri_complete !== undefined) {
    verificationUriComplete = checkVerificationUri(json.verification_uri_complete, base);
    if (verificationUriComplete === null) return null;
  }
  const expiresIn = intIn(json.expires_in, 1, MAX_EXPIRES_IN_S);
  const interval = json.interval === undefined ? DEFAULT_INTERVAL_S : intIn(json.interval, 1, MAX_INTERVAL_S);
  if (expiresIn === null || interval === null) return null;
  return { deviceCode, userCode, verificationUri, verificationUriComplete, expiresIn, interval };
}

export async function requestDeviceCodes(client: ResolvedClient, signal: AbortSignal): Promise<DeviceCodeAnswer> {
  const url = new URL(client.base.href.replace(/\/+$/, '') + client.server.deviceCodePath);
  const raw = await postForm(url, { client_id: client.clientId, scope: client.server.scope }, signal);
  if (raw.kind === 'unreachable') return raw;
  if (raw.json === null)
    return raw.status >= 200 && raw.status < 300 ? { kind: 'malformed' } : { kind: 'refused', error: null };
  const error = errorOf(raw.json);
  if (error !== undefined) return { kind: 'refused', error };
  if (raw.status !== 200) return { kind: 'refused', error: null };
  const codes = parseDeviceCodes(raw.json, client.base);
  return codes === null ? { kind: 'malformed' } : { kind: 'codes', codes };
}

/** Reads one token-endpoint answer (exported for the unit tests). */
export function readPollAnswer(status: number, json: Record<string, unknown> | null): PollAnswer {
  if (status === 429 || status >= 500) return { kind: 'transient' };
  if (json === null) return status === 200 ? { kind: 'malformed' } : { kind: 'refused', error: null };
  const error = errorOf(json);
  if (error === 'authorization_pending') return { kind: 'pending' };
  if (error === 'slow_down') return { kind: 'slow_down', interval: intIn(json.interval, 1, MAX_INTERVAL_S) };
  if (error === 'access_denied') return { kind: 'denied' };
  // GitHub's table names the error `expired_token` and its prose `token_expired`: both end the session.
  if (error === 'expired_token' || error === 'token_expired') return { kind: 'expired' };
  if (error !== undefined) return { kind: 'refused', error };
  if (status !== 200) return { kind: 'refused', error: null };
  const token = json.access_token;
  if (typeof token !== 'string' || !ACCESS_TOKEN.test(token)) return { kind: 'malformed' };
  if (
    json.token_type !== undefined &&
    (typeof json.token_type !== 'string' || json.token_type.toLowerCase() !== 'bearer')
  )
    return { kind: 'malformed' };
  return { kind: 'token', accessToken: token };
}

export async function pollToken(client: ResolvedClient, deviceCode: string, signal: AbortSignal): Promise<PollAnswer> {
  const url = new URL(client.base.href.replace(/\/+$/, '') + client.server.tokenPath);
  const raw = await postForm(
    url,
    { client_id: client.clientId, device_code: deviceCode, grant_type: DEVICE_GRANT_TYPE },
    signal,
  );
  if (raw.kind === 'unreachable') return { kind: 'transient' };
  return readPollAnswer(raw.status, raw.json);
}
