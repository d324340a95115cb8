import type { Logger } from 'pino';
import { ServiceError } from '../../protocol/errors.ts';
import type { GaugeAuthSession, GaugeAuthSessionCreate } from '../../protocol/http/gauge-auth-sessions.ts';
import type { GaugeOAuthClient } from '../../protocol/http/settings.ts';
import { newId } from '../../protocol/ids.ts';
import type { GaugeAuthMode } from '../../protocol/gauge.ts';
import type { Actor } from '../actor.ts';
import { checkTarget } from './auth-session-validation.ts';
import { createSessionFlow, isFinal, type Session } from './auth-session-flow.ts';
import { resolveClient, type ResolvedClient } from './oauth-clients.ts';
import { gaugeDisabled, type GaugeService } from './service.ts';
import { checkId } from './validation.ts';

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

export function createAuthSessions(deps: AuthSessionDeps) {
  const { service, log } = deps;
  const secondMs = deps.secondMs ?? 1000;
  const allowedHosts = deps.allowedHosts ?? 'any';
  const sessions = new Map<string, Session>();
  const { run, start, finish } = createSessionFlow({ service, log, secondMs });
  let closed = false;

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
      checkTarget(input, service);
      const settings = deps.settings();
      if (!settings.enabled) throw gaugeDisabled();
      const client = resolveClient(settings.oauthClients, input.providerId, allowedHosts);
      const now = Date.now();
      prune(sessions, now);
      const live = [...sessions.values()].filter((s) => !isFinal(s)).length;
      if (closed)
        throw new ServiceError('CONFLICT', 'The service is stopping; start the session again once it is back.');
      if (live >= MAX_LIVE) {
        throw new ServiceError(
          'CONFLICT',
          `${MAX_LIVE} auth sessions are already running; finish or cancel one (DELETE /v1/gauge/auth-sessions/{id}).`,
        );
      }
      const s = newSession(input, client, actor, requestId, now);
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

function prune(sessions: Map<string, Session>, now: number): void {
  const ended = [...sessions.values()].filter((s) => s.endedAtMs !== null).sort((a, b) => a.endedAtMs! - b.endedAtMs!);
  for (const s of ended) if (now - s.endedAtMs! > ENDED_KEEP_MS) sessions.delete(s.view.id);
  for (const s of ended) {
    if (sessions.size <= MAX_KEPT) break;
    sessions.delete(s.view.id);
  }
}

function newSession(
  input: GaugeAuthSessionCreate,
  client: ResolvedClient,
  actor: Actor,
  requestId: string,
  now: number,
): Session {
  return {
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
}

export type AuthSessions = ReturnType<typeof createAuthSessions>;
