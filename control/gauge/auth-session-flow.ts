import type { Logger } from 'pino';
import { ServiceError } from '../../protocol/errors.ts';
import type {
  GaugeAuthFailureCode,
  GaugeAuthSession,
  GaugeAuthSessionState,
} from '../../protocol/http/gauge-auth-sessions.ts';
import type { Actor } from '../actor.ts';
import { pollToken, requestDeviceCodes, type PollAnswer } from './device-flow.ts';
import type { ResolvedClient } from './oauth-clients.ts';
import type { GaugeService } from './service.ts';

// One auth session's device flow (control/gauge/auth-sessions.ts): the codes requested, the token polled for at
// the server's interval, and the credential stored through the Gauge service's own account writes.

/** Consecutive network failures or 5xx answers a session rides out (one interval apart) before it fails. */
const MAX_TRANSIENT = 5;
const SLOW_DOWN_STEP_S = 5;

export interface Session {
  view: GaugeAuthSession;
  client: ResolvedClient;
  actor: Actor;
  requestId: string;
  deviceCode: string;
  expiresAtMs: number;
  /** The pending timer fires at expiry: that tick expires the session instead of polling. */
  expiring: boolean;
  endedAtMs: number | null;
  transient: number;
  timer: NodeJS.Timeout | null;
  abort: AbortController;
  /** The poll or store in progress, awaited by DELETE and by close. */
  busy: Promise<void> | null;
}

export const FINAL: ReadonlySet<GaugeAuthSessionState> = new Set(['succeeded', 'failed', 'expired', 'cancelled']);
export const isFinal = (s: Session) => FINAL.has(s.view.state);

const FAILURES: Record<GaugeAuthFailureCode, string> = {
  access_denied: 'The person declined the authorization at the provider.',
  expired_token: 'The provider says the code expired before it was entered; start a new session.',
  expired: 'The code expired before it was entered; start a new session.',
  refused: 'The provider refused the device flow',
  malformed: 'The provider answered with something that is not a device-flow answer.',
  unreachable: 'The provider could not be reached.',
  account_missing: 'The account this session was for no longer exists.',
  store_failed: 'The credential could not be stored.',
  shutdown: 'The service stopped before the flow finished.',
};

export function endSession(
  log: Pick<Logger, 'info'>,
  s: Session,
  state: GaugeAuthSessionState,
  code: GaugeAuthFailureCode | null,
  detail = '',
): void {
  if (isFinal(s)) return;
  s.view.state = state;
  s.view.failure = code === null ? null : { code, message: FAILURES[code] + detail };
  s.deviceCode = '';
  s.endedAtMs = Date.now();
  if (s.timer !== null) clearTimeout(s.timer);
  s.timer = null;
  s.abort.abort();
  log.info({ authSession: s.view.id, providerId: s.view.providerId, state, failure: code }, 'gauge auth session ended');
}

export interface SessionFlowDeps {
  service: Pick<GaugeService, 'createAccount' | 'updateAccount'>;
  log: Pick<Logger, 'info' | 'warn'>;
  secondMs: number;
}

export function createSessionFlow(deps: SessionFlowDeps) {
  const { service, log, secondMs } = deps;
  const finish = (s: Session, state: GaugeAuthSessionState, code: GaugeAuthFailureCode | null, detail = '') =>
    endSession(log, s, state, code, detail);
  return { run, start, finish };

  function schedule(s: Session): void {
    const now = Date.now();
    const at = Math.min(now + s.view.interval * secondMs, s.expiresAtMs);
    s.expiring = at >= s.expiresAtMs;
    s.timer = setTimeout(() => run(s, tick), Math.max(0, at - now));
    s.timer.unref();
  }

  /** One step at a time per session; an unexpected throw ends the session, never the service. */
  function run(s: Session, step: (s: Session) => Promise<void>): void {
    s.timer = null;
    s.busy = step(s)
      .catch((err: unknown) => {
        log.warn(
          { authSession: s.view.id, code: err instanceof ServiceError ? err.code : 'INTERNAL' },
          'gauge auth session step failed',
        );
        finish(s, 'failed', 'store_failed');
      })
      .finally(() => {
        s.busy = null;
      });
  }

  async function tick(s: Session): Promise<void> {
    if (isFinal(s)) return;
    if (s.expiring || Date.now() >= s.expiresAtMs) return finish(s, 'expired', 'expired');
    s.view.state = 'polling';
    const answer = await pollToken(s.client, s.deviceCode, s.abort.signal);
    if (isFinal(s)) return;
    await react(s, answer);
  }

  async function react(s: Session, answer: PollAnswer): Promise<void> {
    switch (answer.kind) {
      case 'pending':
        s.transient = 0;
        return schedule(s);
      case 'slow_down':
        s.transient = 0;
        s.view.interval = Math.max(s.view.interval + SLOW_DOWN_STEP_S, answer.interval ?? 0);
        return schedule(s);
      case 'transient':
        if (++s.transient >= MAX_TRANSIENT) return finish(s, 'failed', 'unreachable');
        return schedule(s);
      case 'denied':
        return finish(s, 'failed', 'access_denied');
      case 'expired':
        return finish(s, 'expired', 'expired_token');
      case 'refused':
        return finish(s, 'failed', 'refused', answer.error === null ? '.' : ` (${answer.error}).`);
      case 'malformed':
        return finish(s, 'failed', 'malformed');
      case 'token':
        return store(s, answer.accessToken);
    }
  }

  async function store(s: Session, token: string): Promise<void> {
    const { providerId, authMode, accountId } = s.view;
    try {
      const record =
        accountId === null
          ? await service.createAccount(
              { providerId, authMode, credential: token },
              s.actor,
              s.requestId,
              'auth-session',
            )
          : await service.updateAccount(accountId, { credential: token }, s.actor, s.requestId, false);
      s.view.accountId = record.id;
      finish(s, 'succeeded', null);
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'NOT_FOUND') return finish(s, 'failed', 'account_missing');
      throw err;
    }
  }

  async function start(s: Session): Promise<void> {
    const answer = await requestDeviceCodes(s.client, s.abort.signal);
    if (isFinal(s)) return;
    if (answer.kind === 'unreachable') return finish(s, 'failed', 'unreachable');
    if (answer.kind === 'malformed') return finish(s, 'failed', 'malformed');
    if (answer.kind === 'refused')
      return finish(
        s,
        'failed',
        'refused',
        answer.error === null ? '; check `gauge.oauthClients`.' : ` (${answer.error}); check \`gauge.oauthClients\`.`,
      );
    const { codes } = answer;
    s.deviceCode = codes.deviceCode;
    s.expiresAtMs = Date.now() + codes.expiresIn * secondMs;
    Object.assign(s.view, {
      userCode: codes.userCode,
      verificationUri: codes.verificationUri,
      verificationUriComplete: codes.verificationUriComplete,
      interval: codes.interval,
      expiresAt: new Date(s.expiresAtMs).toISOString(),
    });
    schedule(s);
  }
}
