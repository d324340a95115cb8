import { isRecord } from '../../shared/shape.ts';
import { parseJson, type SseFields } from './report.ts';
import { bytesAt } from '../../shared/sse.ts';

// Streams whose events say their type (Responses, Anthropic Messages) are filtered by that type before any
// parse. OpenAI and Anthropic name each event in an `event:` line; compatible servers may leave it out,
// and then the payload's own `"type":"..."` is looked for as a substring first.

export interface TypedPayload {
  type: string;
  payload: Record<string, unknown>;
}

export interface TypeFilter {
  /**
   * The parsed payload of an event of one of the wanted types, or null without parsing anything else.
   * `worthParsing(type, data)` may still refuse a wanted type after a cheaper substring test (an item that
   * cannot be a tool call). The payload's own `type` decides over the `event:` line when both exist.
   */
  read(ev: SseFields, worthParsing?: (type: string, data: string) => boolean): TypedPayload | null;
  /** Whether a raw block may be one that `read` takes (see UsageCollector.mayRead), without decoding it. */
  mayHold(block: Buffer): boolean;
}

const EVENT_FIELD = Buffer.from('event:');
// A later `event` line follows a line end; both are rare bytes, which keeps the native search fast.
const EVENT_AFTER_LF = Buffer.from('\nevent');
const EVENT_AFTER_CR = Buffer.from('\revent');
const MESSAGE = Buffer.from('message');

/** Whether block[from, to) is exactly `name`. */
const bytesAre = (block: Buffer, from: number, to: number, name: Buffer): boolean =>
  to - from === name.length && bytesAt(block, from, name);

/** The end of the line that starts at `from`: its CR or LF, or the end of the block. */
function lineEnd(block: Buffer, from: number): number {
  let i = from;
  for (let c = block[i]; c !== undefined && c !== 0x0a && c !== 0x0d; c = block[++i]);
  return i;
}

export function createTypeFilter(wanted: readonly string[]): TypeFilter {
  const names = new Set(wanted);
  const quoted = wanted.map((type) => [type, `"${type}"`] as const);
  const bare = wanted.map((type) => Buffer.from(type));
  return {
    read(ev, worthParsing) {
      let hint: string | null = null;
      if (ev.event !== null && ev.event !== 'message') {
        if (!names.has(ev.event)) return null;
        hint = ev.event;
      } else {
        for (const [type, needle] of quoted) {
          if (ev.data.includes(needle)) {
            hint = type;
            break;
          }
        }
        if (hint === null) return null;
      }
      if (worthParsing !== undefined && !worthParsing(hint, ev.data)) return null;
      const payload = parseJson(ev.data);
      if (!isRecord(payload)) return null;
      const type = typeof payload.type === 'string' ? payload.type : hint;
      return names.has(type) ? { type, payload } : null;
    },
    mayHold(block) {
      // OpenAI and Anthropic open each block with its `event:` line, and that name decides (as in read)
      // unless a later line of the block could name another.
      if (bytesAt(block, 0, EVENT_FIELD)) {
        const from = block[EVENT_FIELD.length] === 0x20 ? EVENT_FIELD.length + 1 : EVENT_FIELD.length;
        const end = lineEnd(block, from);
        if (end > from && !bytesAre(block, from, end, MESSAGE)) {
          for (const name of bare) if (bytesAre(block, from, end, name)) return true;
          return block.includes(EVENT_AFTER_LF, end) || block.includes(EVENT_AFTER_CR, end);
        }
      }
      // Otherwise any wanted name, quoted in the payload or on an event line further down.
      for (const needle of bare) if (block.includes(needle)) return true;
      return false;
    },
  };
}
