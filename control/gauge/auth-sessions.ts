import type { Logger } from 'pino';
import { ServiceError } from '../../protocol/errors.ts';
import { GAUGE_PROVIDERS } from '../../protocol/gauge-catalog.ts';
import {
  GAUGE_DEVICE_FLOW_PROVIDERS,
  type GaugeAuthFailureCode,
  type GaugeAuthSession,
  type GaugeAuthSessionCreate,
  type GaugeAuthSessionState,
} from '../../protocol/http/gauge-auth-sessions.ts';
import type { GaugeOAuthClient } from '../../protocol/http/settings.ts';
import { newId } from '../../protocol/ids.ts';
import type { GaugeAuthMode } from '../../protocol/gauge.ts';
import type { Actor } from '../actor.ts';
import { pollToken, requestDeviceCodes, type PollAnswer } from './device-flow.ts';
import { resolveClient, type ResolvedClient } from './oauth-clients.ts';
import { gaugeDisabled, type GaugeService } from './service.ts';
import { checkId } from './validation.ts';
import { withArticle } from '../../protocol/words.ts';

// Auth sessions: the service runs an RFC 8628 device flow itself. Sessions live in memory only (a restart
// ends them; the person starts again), at most 16 at once. Each polls on its own unref'd timer at the
// server's interval, +5 s for good after each slow_down (or the server's new interval when larger). The
// device code and the token stay in this closure: the token goes to the vault through the Gauge service's
// own account writes (with their audit records) and is dropped; neither is logged or shown.

export interface AuthSessionDeps {
  service: Pick<GaugeService, 'getAccount' | 'createAccount' | 'updateAccount'>;
  settings(): { enabled: boolean; oauthClients: Record<string, GaugeOAuthClient> };
  log: Pick<Logger, 'info' | 'warn'>;
  allowedHosts?: 'any' | 'loopback';
  /** Tests only: how long one protocol second lasts (intervals and expiry scale with it). */
  secondMs?: number;
}

const MAX_LIVE = 16;
/** Ended sessions stay readable this long, so a client polling GET sees the outcome. */
const ENDED_KEEP_MS = 15 * 60_000;
const MAX_KEPT = 64;
/** Consecutive network failures or 5xx answers a session rides out (one interval apart) before it fails. */
const MAX_TRANSIENT = 5;
const SLOW_DOWN_STEP_S = 5;

interface Session {
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

const FINAL: ReadonlySet<GaugeAuthSessionState> = new Set(['succeeded', 'failed', 'expired', 'cancelled']);
const isFinal = (s: Session) => FINAL.has(s.view.state);
const bad = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

/**
 * SWITCHYARD_GAUGE_ALLOWED_HOSTS=loopback as the gauge worker reads it; SWITCHYARD_GAUGE_AUTH_SECOND_MS (tests,
 * 1..1000).
 */
export function authSessionOptionsFromEnv(
  env: NodeJS.ProcessEnv = process.env,
): Pick<AuthSessionDeps, 'allowedHosts' | 'secondMs'> {
  const second = Number(env.SWITCHYARD_GAUGE_AUTH_SECOND_MS);
  return {
    allowedHosts: env.SWITCHYARD_GAUGE_ALLOWED_HOSTS === 'loopback' ? 'loopback' : 'any',
    ...(Number.isInteger(second) && second >= 1 && second <= 1000 && { secondMs: second }),
  };
}

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

// A factory: one closure holds the instance's state and returns its methods, each short; hence its length.
export function createAuthSessions(deps: AuthSessionDeps) {
  const { service, log } = deps;
  const secondMs = deps.secondMs ?? 1000;
  const allowedHosts = deps.allowedHosts ?? 'any';
  const sessions = new Map<string, Session>();
  let closed = false;

  function prune(now: number): void {
    const ended = [...sessions.values()]
      .filter((s) => s.endedAtMs !== null)
      .sort((a, b) => a.endedAtMs! - b.endedAtMs!);
    for (const s of ended) if (now - s.endedAtMs! > ENDED_KEEP_MS) sessions.delete(s.view.id);
    for (const s of ended) {
      if (sessions.size <= MAX_KEPT) break;
      sessions.delete(s.view.id);
    }
  }

  function finish(s: Session, state: GaugeAuthSessionState, code: GaugeAuthFailureCode | null, detail = ''): void {
    if (isFinal(s)) return;
    s.view.state = state;
    s.view.failure = code === null ? null : { code, message: FAILURES[code] + detail };
    s.deviceCode = '';
    s.endedAtMs = Date.now();
    if (s.timer !== null) clearTimeout(s.timer);
    s.timer = null;
    s.abort.abort();
    log.info(
      { authSession: s.view.id, providerId: s.view.providerId, state, failure: code },
      'gauge auth session ended',
    );
  }

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

  function checkTarget(input: GaugeAuthSessionCreate): void {
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

  function mustGet(id: string): Session {
    const s = sessions.get(checkId(id));
    if (!s) throw new ServiceError('NOT_FOUND', `No Gauge auth session with ID \`${id}\`.`, { param: 'id' });
    return s;
  }

  const snapshot = (s: Session): GaugeAuthSession => structuredClone(s.view);

  return {
    /**
     * 400 bad target or no client, 404 unknown account, 409 Gauge off or too many sessions; else 201 whatever the
     * provider said.
     */
    async create(input: GaugeAuthSessionCreate, actor: Actor, requestId: string): Promise<GaugeAuthSession> {
      checkTarget(input);
      const settings = deps.settings();
      if (!settings.enabled) throw gaugeDisabled();
      const client = resolveClient(settings.oauthClients, input.providerId, allowedHosts);
      const now = Date.now();
      prune(now);
      const live = [...sessions.values()].filter((s) => !isFinal(s)).length;
      if (closed)
        throw new ServiceError('CONFLICT', 'The service is stopping; start the session again once it is back.');
      if (live >= MAX_LIVE) {
        throw new ServiceError(
          'CONFLICT',
          `${MAX_LIVE} auth sessions are already running; finish or cancel one (DELETE /v1/gauge/auth-sessions/{id}).`,
        );
      }
      const s: Session = {
        view: {
          id: newId('auth_', now),
          providerId: input.providerId,
          authMode: input.authMode as GaugeAuthMode,
          accountId: input.accountId ?? null,
          state: 'pending',
          userCode: null,
          verificationUri: null,
          verificationUriComplete: null,
          interval: 0,
          expiresAt: null,
          createdAt: new Date(now).toISOString(),
          failure: null,
        },
        client,
        actor,
        requestId,
        deviceCode: '',
        expiresAtMs: Number.POSITIVE_INFINITY,
        expiring: false,
        endedAtMs: null,
        transient: 0,
        timer: null,
        abort: new AbortController(),
        busy: null,
      };
      sessions.set(s.view.id, s);
      log.info({ authSession: s.view.id, providerId: s.view.providerId }, 'gauge auth session started');
      run(s, start);
      await s.busy;
      return snapshot(s);
    },

    get: (id: string): GaugeAuthSession => snapshot(mustGet(id)),

    /** Cancels a live session; a final one is answered as it is. A credential being stored finishes first. */
    async cancel(id: string): Promise<GaugeAuthSession> {
      const s = mustGet(id);
      if (!isFinal(s)) {
        s.abort.abort();
        await s.busy;
        finish(s, 'cancelled', null);
      }
      return snapshot(s);
    },

    async close(): Promise<void> {
      closed = true;
      const live = [...sessions.values()].filter((s) => !isFinal(s));
      for (const s of live) s.abort.abort();
      await Promise.all(live.map((s) => s.busy));
      for (const s of live) finish(s, 'failed', 'shutdown');
    },
  };
}

export type AuthSessions = ReturnType<typeof createAuthSessions>;
