import { LIMIT_BOUNDS } from '../../protocol/http/limits.ts';

// The session a call belongs to for key affinity (W4.2; docs/api.md, Key pools): the header a client names it by
// (Switchyard's own, Claude Code's, Codex CLI's and a plain one), else a member of its body (Codex's
// `prompt_cache_key`, Claude Code's `metadata.user_id`, the APIs' `user`). Bounded and reduced to characters
// safe in a key and a log line, as the limits' sessions are; null when the call names none.

const HEADERS = ['x-switchyard-session', 'x-claude-code-session-id', 'session-id', 'session_id', 'x-session-id'];

const clean = (value: string) => value.slice(0, LIMIT_BOUNDS.scopeIdMax).replace(/[^A-Za-z0-9._:@-]/g, '_');

/** The top-level body members that may name a session, in order (the edge scans large bodies for them). */
export const SESSION_MEMBERS = ['prompt_cache_key', 'user'] as const;

export function affinitySession(
  headers: Readonly<Record<string, string | undefined>>,
  member: (name: string) => unknown,
): string | null {
  for (const name of HEADERS) {
    const value = headers[name]?.trim();
    if (value) return clean(value);
  }
  const cacheKey = member('prompt_cache_key');
  if (typeof cacheKey === 'string' && cacheKey.trim() !== '') return clean(cacheKey.trim());
  const metadata = member('metadata');
  const userId =
    typeof metadata === 'object' && metadata !== null ? (metadata as Record<string, unknown>).user_id : undefined;
  if (typeof userId === 'string' && userId.trim() !== '') return clean(userId.trim());
  const user = member('user');
  return typeof user === 'string' && user.trim() !== '' ? clean(user.trim()) : null;
}
