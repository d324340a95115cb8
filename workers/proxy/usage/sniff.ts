import { isRecord } from '../providers/shape.ts';
import { parseJson, type SseFields } from './report.ts';

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
}

export function createTypeFilter(wanted: readonly string[]): TypeFilter {
  const names = new Set(wanted);
  const quoted = wanted.map((type) => [type, `"${type}"`] as const);
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
  };
}
