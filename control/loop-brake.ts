import type { Logger } from 'pino';
import { ServiceError } from '../protocol/errors.ts';
import {
  LIMIT_BOUNDS,
  LOOP_BRAKE_DEFAULTS,
  type LoopBrake,
  type LoopBrakeUpdate,
  type PausedSession,
} from '../protocol/http/limits.ts';
import type { AuditRepo } from '../store/audit-repo.ts';
import type { StoreEnv } from '../store/env.ts';
import type { LimitRepo } from '../store/limit-repo.ts';
import type { Actor } from './actor.ts';
import { auditedCrud } from './crud.ts';
import type { EventBus } from './events.ts';

// The loop brake (docs/api.md, Limits): the same tool call with the same arguments in N calls of one session
// within T seconds pauses the session until a person resumes it. Admission (edge/gateway/admission.ts) tells it
// each call's last tool call; what it remembers is bounded: a signature hash per call, a few per session, and
// the sessions seen most recently.

export interface LoopBrakeDeps {
  env: StoreEnv;
  repo: LimitRepo;
  audit: AuditRepo;
  bus: EventBus;
  log: Logger;
  now: () => number;
  /** How many sessions may be paused at once (PAUSED_MAX; tests set fewer). */
  pausedMax?: number;
}

/** Sessions whose recent tool calls are remembered; the least recently seen is forgotten first. */
const SESSIONS_MAX = 10_000;
/** Distinct tool calls remembered per session: a loop repeats one, so a few are plenty. */
const SIGNATURES_MAX = 16;
/**
 * Sessions paused at once. Each pause takes a real loop from an authenticated client, but a client that names a
 * new session per loop could otherwise grow the list, and the store, without end: past this, a new pause
 * forgets the session paused longest ago.
 */
const PAUSED_MAX = 10_000;

export type LoopBrakeService = ReturnType<typeof createLoopBrake>;

// Over 80 lines as a closure of short methods over one state, the shape of every control service here.
export function createLoopBrake(deps: LoopBrakeDeps) {
  const { env, repo, now } = deps;
  const commits = auditedCrud({ env, audit: deps.audit, resourceType: 'loop-brake' });
  const sessionCommits = auditedCrud({ env, audit: deps.audit, resourceType: 'session' });
  let config: LoopBrake = repo.brake() ?? LOOP_BRAKE_DEFAULTS;
  const pausedMax = deps.pausedMax ?? PAUSED_MAX;
  // In the order they were paused (ISO times sort as text), so that the first is the one paused longest ago.
  const stored = repo.paused().sort((a, b) => (a.pausedAt < b.pausedAt ? -1 : a.pausedAt > b.pausedAt ? 1 : 0));
  const paused = new Map(stored.map((p) => [p.session, p]));
  /** Per session, in the order last seen: each signature's recent times. */
  const seen = new Map<string, Map<string, number[]>>();

  function pause(session: string, tool: string, repeats: number): void {
    const record: PausedSession = { session, pausedAt: new Date(now()).toISOString(), tool, repeats };
    const forgotten = paused.size >= pausedMax ? forgetOldest() : null;
    paused.set(session, record);
    deps.bus.publish('session.paused', record);
    deps.log.warn({ session, tool, repeats }, 'loop brake: paused a session that repeated one tool call');
    env
      .commit(() => {
        if (forgotten !== null) repo.stageResumed(forgotten);
        repo.stagePaused(record);
      })
      .catch((err: unknown) => deps.log.warn({ err: String(err).slice(0, 300) }, 'could not store a paused session'));
  }

  /** Makes room for one more pause: the session paused longest ago runs again, and says so. */
  function forgetOldest(): string {
    const [session, record] = paused.entries().next().value!;
    paused.delete(session);
    deps.bus.publish('session.resumed', { session });
    deps.log.warn(
      { session, pausedAt: record.pausedAt, pausedMax },
      'loop brake: as many sessions are paused as may be; resumed the one paused longest ago',
    );
    return session;
  }

  return {
    config: () => config,
    /** Whether admission has anything to ask: the brake is on, or some session waits to be resumed. */
    active: () => config.enabled || paused.size > 0,
    isPaused: (session: string) => paused.get(session) ?? null,
    paused: () => [...paused.values()],
    /**
     * A call of `session` whose last tool call has signature `signature`: true when it is the one too many, and
     * the session is now paused.
     */
    observe(session: string, signature: string, tool: string): boolean {
      if (!config.enabled) return false;
      const t = now();
      let calls = seen.get(session);
      if (calls === undefined) {
        if (seen.size >= SESSIONS_MAX) seen.delete(seen.keys().next().value!);
        calls = new Map();
      } else seen.delete(session);
      seen.set(session, calls);
      const since = t - config.windowSeconds * 1000;
      const times = (calls.get(signature) ?? []).filter((x) => x > since);
      times.push(t);
      calls.delete(signature);
      if (calls.size >= SIGNATURES_MAX) calls.delete(calls.keys().next().value!);
      calls.set(signature, times);
      if (times.length < config.repeats) return false;
      seen.delete(session);
      pause(session, tool, times.length);
      return true;
    },
    async update(patch: LoopBrakeUpdate, actor: Actor, requestId: string): Promise<LoopBrake> {
      const next = { ...config, ...patch };
      const metadata = { enabled: next.enabled, repeats: next.repeats, windowSeconds: next.windowSeconds };
      await commits.commit('loop-brake', { action: 'loop-brake.update', actor, requestId, metadata }, () =>
        repo.stageBrake(next),
      );
      config = next;
      return config;
    },
    async resume(session: string, actor: Actor, requestId: string): Promise<PausedSession> {
      const record = session.length <= LIMIT_BOUNDS.scopeIdMax ? paused.get(session) : undefined;
      if (record === undefined)
        throw new ServiceError('NOT_FOUND', `No paused session \`${session.slice(0, LIMIT_BOUNDS.scopeIdMax)}\`.`, {
          param: 'id',
        });
      await sessionCommits.commit(session, { action: 'session.resume', actor, requestId, metadata: {} }, () =>
        repo.stageResumed(session),
      );
      paused.delete(session);
      seen.delete(session);
      deps.bus.publish('session.resumed', { session });
      return record;
    },
  };
}
