import { randomInt } from 'node:crypto';
import { ServiceError } from '../protocol/errors.ts';
import type { PairingCreate, PairingView } from '../protocol/http/service-accounts.ts';
import { DEFAULT_TOKEN_SCOPES } from '../protocol/http/tokens.ts';
import { newId } from '../protocol/ids.ts';
import type { Scope } from '../protocol/scopes.ts';
import { sseFrame, type EndReason, type Subscriber } from './events.ts';
import type { PairingPort } from '../protocol/ports/service-accounts.ts';
import type { TokenService } from './token-service.ts';

// Pairing: a local app asks for a token over a server-sent event stream and a person approves or denies it
// with an admin token. Requests live in memory only (a restart ends them, as it ends their streams), at most
// `maxPending` at once, each for `ttlMs`. The secret of an approved request exists in exactly one place
// outside the token service: the `pairing.approved` frame queued for the requester's own stream. It is
// never logged, audited (the token's creation is, without it) or answered to the approver.

export const PAIRING_TTL_MS = 5 * 60_000;
export const MAX_PENDING_PAIRINGS = 10;
/** How many approved or denied requests are remembered (each for the expiry time), to say so to a second try. */
const MAX_DECIDED = 100;

/** Crockford base32 without the letters people misread; `XXXX-XXXX`, shown by both the app and the approver. */
const CODE_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
function userCode(): string {
  let code = '';
  for (let i = 0; i < 8; i++) code += (i === 4 ? '-' : '') + CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return code;
}

/** One requester's stream: a subscriber as edge/http/event-stream.ts reads them, holding at most two frames. */
class PairingStream implements Subscriber {
  private queue: string[] = [];
  private end: EndReason | null = null;
  private ready: (() => void) | null = null;
  constructor(private readonly onClose: () => void) {}

  push(frame: string, last: boolean): void {
    if (this.end !== null) return;
    this.queue.push(frame);
    if (last) this.end = 'done';
    const ready = this.ready;
    this.ready = null;
    ready?.();
  }
  take(): string[] {
    const frames = this.queue;
    this.queue = [];
    return frames;
  }
  onReady(callback: () => void): void {
    this.ready = callback;
  }
  ended(): EndReason | null {
    return this.end;
  }
  /** Called by the writer when the stream is over, ended by either side. */
  close(): void {
    const wasOpen = this.end === null;
    this.end ??= 'closed';
    this.queue = [];
    this.ready = null;
    if (wasOpen) this.onClose();
  }
  isOpen(): boolean {
    return this.end === null;
  }
}

interface Pending {
  view: PairingView;
  scopes: Scope[];
  stream: PairingStream;
  timer: NodeJS.Timeout;
}

export interface PairingOptions {
  tokens: TokenService;
  ttlMs?: number;
  maxPending?: number;
}

/** The port the routes reach (protocol/ports/service-accounts.ts), with the answers this service gives at once. */
export interface Pairing extends PairingPort {
  /** Registers a request; its stream already holds `pairing.pending`. */
  request(input: PairingCreate): { view: PairingView; stream: Subscriber };
  list(): PairingView[];
  deny(id: string): { id: string; denied: true };
  /** Shutdown: every requester's stream ends with `pairing.expired`. */
  close(): void;
}

/** A bounded, positive test override of the five-minute expiry (SWITCHYARD_PAIRING_TTL_MS, 1..600000). */
export function pairingOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): Pick<PairingOptions, 'ttlMs'> {
  const ttl = Number(env.SWITCHYARD_PAIRING_TTL_MS);
  return Number.isInteger(ttl) && ttl >= 1 && ttl <= 600_000 ? { ttlMs: ttl } : {};
}

export function createPairing({
  tokens,
  ttlMs = PAIRING_TTL_MS,
  maxPending = MAX_PENDING_PAIRINGS,
}: PairingOptions): Pairing {
  const pending = new Map<string, Pending>();
  const decided = createDecided(ttlMs);
  let closed = false;

  /** A pending request by its ID or its user code (any case). */
  const find = (idOrCode: string): Pending | undefined =>
    pending.get(idOrCode) ?? [...pending.values()].find((p) => p.view.userCode === idOrCode.trim().toUpperCase());

  const take = (idOrCode: string): Pending => {
    const p = find(idOrCode);
    if (!p) {
      decided.check(idOrCode);
      throw new ServiceError('NOT_FOUND', `No pending pairing request with ID \`${idOrCode.slice(0, 160)}\`.`, {
        param: 'id',
      });
    }
    pending.delete(p.view.id);
    clearTimeout(p.timer);
    return p;
  };

  return {
    request(input) {
      checkRoom(closed, pending.size, maxPending);
      const view = newView(input, ttlMs);
      const { id } = view;
      // The requester leaving withdraws the request: nobody would receive the token.
      const stream = new PairingStream(() => {
        const p = pending.get(id);
        if (p?.stream === stream) {
          pending.delete(id);
          clearTimeout(p.timer);
        }
      });
      const timer = setTimeout(() => {
        if (pending.get(id)?.stream !== stream) return;
        pending.delete(id);
        stream.push(sseFrame('pairing.expired', { id }), true);
      }, ttlMs);
      timer.unref();
      pending.set(id, { view, scopes: view.scopes as Scope[], stream, timer });
      stream.push(sseFrame('pairing.pending', { id, userCode: view.userCode, expiresAt: view.expiresAt }), false);
      return { view, stream };
    },

    list: () => [...pending.values()].map((p) => p.view),

    async approve(id, scopes, actor, requestId) {
      const asked = find(id)?.scopes ?? [];
      // An approver may narrow what was asked for, never widen it.
      const wider = scopes?.find((s) => !asked.includes(s));
      if (find(id) && wider !== undefined) {
        throw new ServiceError(
          'INVALID_REQUEST',
          `\`scopes\` may only narrow the requested scopes (${asked.join(', ')}); \`${wider}\` was not requested.`,
          { param: 'scopes' },
        );
      }
      // Taken before the first await, so a second approval or a denial of the same request is a 409.
      const p = take(id);
      decided.remember(p.view, 'approved');
      const { token, secret } = await tokens.create(
        { name: p.view.clientName, scopes: scopes ?? p.scopes },
        actor,
        requestId,
      );
      if (!p.stream.isOpen()) {
        // The requester left while the token was being written: nobody holds its secret, so it must not live.
        await tokens.revoke(token.id, actor, requestId);
        throw new ServiceError(
          'CONFLICT',
          'The requester disconnected before the token reached it; the token was revoked.',
          { param: 'id' },
        );
      }
      p.stream.push(sseFrame('pairing.approved', { token, secret }), true);
      return { id: p.view.id, approved: true, token };
    },

    deny(id) {
      const p = take(id);
      decided.remember(p.view, 'denied');
      p.stream.push(sseFrame('pairing.denied', { id: p.view.id }), true);
      return { id: p.view.id, denied: true };
    },

    close() {
      closed = true;
      for (const id of [...pending.keys()]) take(id).stream.push(sseFrame('pairing.expired', { id }), true);
    },
  };
}

function checkRoom(closed: boolean, size: number, maxPending: number): void {
  if (closed)
    throw new ServiceError('OVERLOADED', 'The service is shutting down.', { headers: { 'retry-after': '1' } });
  if (size >= maxPending) {
    throw new ServiceError(
      'OVERLOADED',
      `At most ${maxPending} pairing requests may wait at once; retry after one is approved, denied or expired.`,
      {
        status: 429,
        headers: { 'retry-after': '5' },
      },
    );
  }
}

function newView(input: PairingCreate, ttlMs: number): PairingView {
  const now = Date.now();
  return {
    id: newId('pair_', now),
    clientName: input.clientName,
    userCode: userCode(),
    scopes: [...(input.scopes ?? DEFAULT_TOKEN_SCOPES)],
    createdAt: new Date(now).toISOString(),
    expiresAt: new Date(now + ttlMs).toISOString(),
  };
}

/**
 * Requests approved or denied in the last `ttlMs`, by ID and by user code: a second approval says what became of
 * the first rather than that nothing is pending.
 */
function createDecided(ttlMs: number) {
  const decided = new Map<string, { userCode: string; outcome: 'approved' | 'denied'; at: number }>();
  return {
    remember(view: PairingView, outcome: 'approved' | 'denied'): void {
      const entry = { userCode: view.userCode, outcome, at: Date.now() };
      decided.set(view.id, entry).set(view.userCode, entry);
      for (const [key, e] of decided)
        if (decided.size > 2 * MAX_DECIDED || e.at < Date.now() - ttlMs) decided.delete(key);
    },
    /** Throws the CONFLICT that says what became of a request decided lately. */
    check(idOrCode: string): void {
      const done = decided.get(idOrCode) ?? decided.get(idOrCode.trim().toUpperCase());
      if (done && done.at >= Date.now() - ttlMs)
        throw new ServiceError('CONFLICT', `Pairing request ${done.userCode} was already ${done.outcome}.`, {
          param: 'id',
          details: { outcome: done.outcome },
        });
    },
  };
}
