import type { AuditAction, AuditMetadata } from '../../protocol/http/audit.ts';
import type { AuditRepo } from '../../store/audit-repo.ts';
import type { Actor } from '../actor.ts';

// Gauge's audit trail: what changed, by name and flag, never a credential, label, URL or path.

export type GaugeAuditAction = Extract<AuditAction, `gauge-${string}`>;

export function stageGaugeAudit(
  audit: AuditRepo,
  action: GaugeAuditAction,
  resourceId: string,
  actor: Actor,
  requestId: string,
  metadata: AuditMetadata,
): void {
  const resourceType = action.startsWith('gauge-account.') ? 'gauge-account' : 'gauge-source';
  audit.stageAppend({ action, resourceType, resourceId, ...actor, requestId, metadata });
}
