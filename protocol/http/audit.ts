// Audit vocabulary. Each later feature adds its actions and resource types here; GET /v1/audit-events
// validates filters against these lists, so a typo in a filter is a 400, not an empty page.
export const AUDIT_ACTIONS = [
  'settings.update',
  'token.bootstrap',
  'token.create',
  'token.update',
  'token.revoke',
  'provider.create',
  'provider.update',
  'provider.delete',
  'provider.test',
  'provider.refresh-models',
  'provider.upgrade',
  'credential.create',
  'credential.update',
  'credential.delete',
  'credential.reject',
  'model.create',
  'model.update',
  'model.delete',
  'model.load',
  'model.unload',
  'model.benchmark',
  'model.residency',
  'preset.create',
  'preset.update',
  'preset.delete',
  'route-pack.create',
  'route-pack.update',
  'route-pack.delete',
  'gauge-account.create',
  'gauge-account.update',
  'gauge-account.delete',
  'gauge-source.update',
  'gauge-history.delete',
  'gauge-budget.create',
  'gauge-budget.update',
  'gauge-budget.delete',
  'gauge-alert-rule.create',
  'gauge-alert-rule.update',
  'gauge-alert-rule.delete',
  'service-account.create',
  'service-account.update',
  'service-account.delete',
  'service.create',
  'service.delete',
  'service.start',
  'service.stop',
  'service.restart',
  'limit.create',
  'limit.update',
  'limit.delete',
  'loop-brake.update',
  'session.resume',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const AUDIT_RESOURCE_TYPES = [
  'settings',
  'token',
  'provider',
  'model',
  'preset',
  'route-pack',
  'gauge-account',
  'gauge-source',
  'gauge-budget',
  'gauge-alert-rule',
  'service-account',
  'service',
  'limit',
  'loop-brake',
  'session',
] as const;
export type AuditResourceType = (typeof AUDIT_RESOURCE_TYPES)[number];

/** `token`: a request authenticated by a local token (actorId is the token ID); `system`: the service itself. */
export const AUDIT_ACTOR_TYPES = ['token', 'system'] as const;
export type AuditActorType = (typeof AUDIT_ACTOR_TYPES)[number];

/** Metadata values are allow-listed per action by the writer; only names, counts, flags and scope lists. */
export type AuditMetadata = Record<string, string | number | boolean | null | string[]>;

export interface AuditEvent {
  id: string;
  createdAt: string;
  action: AuditAction;
  resourceType: AuditResourceType;
  resourceId: string;
  actorType: AuditActorType;
  actorId: string;
  requestId: string | null;
  metadata: AuditMetadata;
}

export const AUDIT_QUERY_PARAMS = [
  'action',
  'resourceType',
  'resourceId',
  'actorType',
  'actorId',
  'requestId',
  'createdAfter',
  'createdBefore',
  'limit',
  'loop-brake',
  'session',
] as const;
