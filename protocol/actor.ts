import type { AuditActorType } from './http/audit.ts';
import type { Principal } from './principal.ts';

export interface Actor {
  actorType: AuditActorType;
  actorId: string;
}

export function actorOf(principal: Principal | null): Actor {
  return principal === null
    ? { actorType: 'system', actorId: 'switchyard' }
    : { actorType: 'token', actorId: principal.tokenId };
}
