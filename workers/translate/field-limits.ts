import { createHash } from 'node:crypto';
import { cannot } from './common.ts';

// Limits the target protocol puts on members a translation copies (docs/api.md, "Translation between
// protocols", "Limits"). A value within the target's limit goes as it is; a longer one is replaced by a stable
// stand-in, so the same client value always maps to the same upstream value (an end-user ID keeps grouping
// calls; a tool name maps back to the client's own in the answer).

/** OpenAI refuses a `user` over 64 characters (`string_above_max_length`); other chat servers take 128. */
export const CHAT_USER_MAX = 64;
/** The bound this service keeps for a Messages upstream's `metadata.user_id`. */
export const MESSAGES_USER_MAX = 256;
/** OpenAI's function names: `^[a-zA-Z0-9_-]{1,64}$`; MCP tool names (Claude Code's `mcp__server__tool`) run longer. */
export const CHAT_TOOL_NAME_MAX = 64;
/** OpenAI takes at most 4 stop sequences and at most 128 tools. */
export const CHAT_STOP_MAX = 4;
export const CHAT_TOOLS_MAX = 128;
/** A Messages upstream's temperature runs from 0 to 1; chat's from 0 to 2. */
export const MESSAGES_TEMPERATURE_MAX = 1;

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * An end-user identifier of at most `max` characters: the client's own when it fits, else `sy_` and the
 * SHA-256 of it in base64url (46 characters), stable across calls. Claude Code's `metadata.user_id` is a
 * ~150-character JSON string.
 */
export function boundedUser(value: string, max: number): string {
  return value.length <= max ? value : `sy_${digest(value).toString('base64url')}`;
}

/**
 * Tool names as a chat upstream takes them, and the way back. A name over 64 characters becomes its first 55,
 * `_` and 8 hex digits of its SHA-256; the answer's tool calls are renamed to the client's name.
 */
export class ToolNames {
  private readonly back = new Map<string, string>();

  upstream(name: string): string {
    if (name.length <= CHAT_TOOL_NAME_MAX) return name;
    const short = `${name.slice(0, CHAT_TOOL_NAME_MAX - 9)}_${digest(name).toString('hex').slice(0, 8)}`;
    this.back.set(short, name);
    return short;
  }

  client(name: string): string {
    return this.back.get(name) ?? name;
  }

  get size(): number {
    return this.back.size;
  }
}

/** A chat upstream's stop sequences: more than it takes is refused, never cut (a cut one would not stop). */
export function chatStops(stops: unknown[]): unknown[] {
  if (stops.length > CHAT_STOP_MAX) {
    throw cannot(
      'stop_sequences',
      `A chat-completions model takes at most ${CHAT_STOP_MAX} stop sequences; this request has ${stops.length}.`,
    );
  }
  return stops;
}

/** A Messages tool_use ID takes `^[a-zA-Z0-9_-]+$`; chat servers mint others (`functions.get:0`). Stable. */
export function messagesToolId(id: string): string {
  if (/^[a-zA-Z0-9_-]+$/.test(id)) return id;
  if (id === '') return id;
  return `${id.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 40)}_${digest(id).toString('hex').slice(0, 8)}`;
}
