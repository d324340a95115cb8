// Local-token scopes (docs/api.md, Scopes). `admin` holds every other scope; the rest are independent,
// so a read-only dashboard token cannot write and an agent's inference token cannot read management data.
export const SCOPES = ['inference', 'read', 'manage', 'admin'] as const;

export type Scope = (typeof SCOPES)[number];

export function isScope(value: unknown): value is Scope {
  return typeof value === 'string' && (SCOPES as readonly string[]).includes(value);
}

export function grants(held: readonly Scope[], needed: Scope): boolean {
  return held.includes('admin') || held.includes(needed);
}
