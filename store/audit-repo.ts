import { encodeTime, monotonicIdFactory } from '../protocol/ids.ts';
import type { AuditEvent } from '../protocol/http/audit.ts';
import type { StoreEnv } from './env.ts';

// Append-only: keys are strictly increasing time-ordered IDs, so a reverse range scan is "newest first"
// and a time filter is a key range. There is no update or delete. Keys are generated here, never taken from
// a client or an upstream; filters compare values, not keys.

const PREFIX = 'aud_';

interface StoredAuditEvent extends Omit<AuditEvent, 'createdAt'> {
  createdAt: number;
}

export type NewAuditEvent = Omit<AuditEvent, 'id' | 'createdAt'>;

export interface AuditFilter {
  action?: string;
  resourceType?: string;
  resourceId?: string;
  actorType?: string;
  actorId?: string;
  requestId?: string;
  createdAfter?: number;
  createdBefore?: number;
  limit: number;
}

export interface AuditRepo {
  /** Stages an append inside the caller's transaction. */
  stageAppend(event: NewAuditEvent, now?: number): AuditEvent;
  query(filter: AuditFilter): { data: AuditEvent[]; hasMore: boolean };
}

function timeKey(ms: number): string {
  return PREFIX + encodeTime(ms);
}

function view(stored: StoredAuditEvent): AuditEvent {
  return { ...stored, createdAt: new Date(stored.createdAt).toISOString() };
}

export function auditRepo(env: StoreEnv): AuditRepo {
  const db = env.db<StoredAuditEvent>('audit');
  const nextId = monotonicIdFactory(PREFIX);
  return {
    stageAppend(event, now = Date.now()) {
      const stored: StoredAuditEvent = { id: nextId(now), createdAt: now, ...event };
      db.put(stored.id, stored);
      return view(stored);
    },
    query(f) {
      // Reverse scan from just past the newest allowed millisecond down to the oldest allowed one.
      const start = f.createdBefore === undefined ? PREFIX + '~' : timeKey(f.createdBefore) + '~';
      const end = f.createdAfter === undefined ? PREFIX : timeKey(f.createdAfter);
      const data: AuditEvent[] = [];
      for (const { value: e } of db.getRange({ start, end, reverse: true })) {
        if (f.action !== undefined && e.action !== f.action) continue;
        if (f.resourceType !== undefined && e.resourceType !== f.resourceType) continue;
        if (f.resourceId !== undefined && e.resourceId !== f.resourceId) continue;
        if (f.actorType !== undefined && e.actorType !== f.actorType) continue;
        if (f.actorId !== undefined && e.actorId !== f.actorId) continue;
        if (f.requestId !== undefined && e.requestId !== f.requestId) continue;
        if (data.length === f.limit) return { data, hasMore: true };
        data.push(view(e));
      }
      return { data, hasMore: false };
    },
  };
}
