import { isRecord } from '../common.ts';

// A Responses `prompt_cache_key` as Messages cache breakpoints. OpenAI caches a prompt's prefix on its own and
// the key only groups requests; a Messages upstream caches only up to blocks marked `cache_control`. A
// client that names a cache key asks for caching, so the request gets the breakpoints that make the prefix
// a conversation shares cacheable: after the tools, after the system prompt, and after the last message,
// the one a later turn extends. Anthropic allows at most four per request and caches each prefix from the
// model's minimum length on (shorter prefixes are simply not cached); it checks about 20 blocks back from
// each breakpoint for an earlier hit, which the breakpoints on the tools and the system cover in longer turns.

type Json = Record<string, unknown>;

/** Anthropic's limit of cache breakpoints in one request. */
export const MAX_BREAKPOINTS = 4;
const EPHEMERAL = Object.freeze({ type: 'ephemeral' });

/** Blocks that take `cache_control`: not thinking blocks (Anthropic refuses them), not an empty text. */
function cacheable(block: unknown): block is Json {
  if (!isRecord(block) || block.type === 'thinking' || block.type === 'redacted_thinking') return false;
  return block.type !== 'text' || (typeof block.text === 'string' && block.text !== '');
}

/**
 * Marks the last tool, the last system block and the last cacheable block of the last message with
 * `cache_control: {type: "ephemeral"}`, in the request this translation built (its own objects, never the
 * client's), each only where it exists; at most MAX_BREAKPOINTS in all.
 */
export function addCacheBreakpoints(request: Json): void {
  let left = MAX_BREAKPOINTS;
  const mark = (block: Json | undefined): void => {
    if (block === undefined || left === 0) return;
    block.cache_control = { ...EPHEMERAL };
    left--;
  };
  if (Array.isArray(request.tools)) mark(request.tools.at(-1) as Json | undefined);
  if (Array.isArray(request.system)) mark(request.system.filter(cacheable).at(-1));
  const last = Array.isArray(request.messages) ? (request.messages.at(-1) as unknown) : undefined;
  if (isRecord(last) && Array.isArray(last.content)) mark(last.content.filter(cacheable).at(-1));
}
