import { newId } from '../../protocol/ids.ts';
import type { TurnEnd } from './responses-socket-turn.ts';

// A connection's continuations (OpenAI's WebSocket mode keeps the latest response of each lane in memory): a
// call that names one in `previous_response_id` is sent upstream with that response's input and output before
// its own input, and without the ID, so it works with `store: false` and through a translation, which keeps no
// responses. Bounded: the latest response of each lane, at most MAX_HELD_BYTES of them per connection.

const MAX_HELD_BYTES = 64 * 1024 * 1024;

interface Held {
  id: string;
  input: unknown[];
  output: unknown[];
  bytes: number;
}

/** An error message for a call, as the connection sends it (responses-socket.ts, errorFrame). */
export interface ContinuationRefusal {
  status: number;
  error: Record<string, unknown>;
}

/** `input` as items: a string is one user message. */
function itemsOf(input: unknown): unknown[] {
  if (typeof input === 'string')
    return [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] }];
  return Array.isArray(input) ? input : [];
}

export function createContinuations() {
  const byId = new Map<string, Held>();
  /** Each lane's latest response, by its ID. */
  const latest = new Map<string, string>();
  /** The IDs each call expanded, until it ends: a failed continuation lets go of what it named. */
  const named = new WeakMap<object, string>();
  let held = 0;

  function forget(id: string): void {
    const entry = byId.get(id);
    if (entry === undefined) return;
    byId.delete(id);
    held -= entry.bytes;
    for (const [lane, latestId] of latest) if (latestId === id) latest.delete(lane);
  }

  function keep(lane: string, entry: Held): void {
    const before = latest.get(lane);
    latest.set(lane, entry.id);
    if (before !== undefined && ![...latest.values()].includes(before)) forget(before);
    byId.set(entry.id, entry);
    held += entry.bytes;
    // Oldest first (a Map keeps insertion order), never the one just kept.
    for (const id of byId.keys()) {
      if (held <= MAX_HELD_BYTES || id === entry.id) break;
      forget(id);
    }
  }

  return {
    /** The call's body with a held `previous_response_id` resolved; a refusal when it names none held. */
    expand(fields: Record<string, unknown>): { body: Record<string, unknown> } | { refusal: ContinuationRefusal } {
      const previous = fields.previous_response_id;
      if (typeof previous !== 'string') return { body: fields };
      const entry = byId.get(previous);
      if (entry === undefined) {
        // Stored responses (`store: true`) are the upstream's to find; the route refuses where none are kept.
        if (fields.store === true) return { body: fields };
        const refusal = {
          status: 400,
          error: {
            type: 'invalid_request_error',
            code: 'previous_response_not_found',
            message:
              `Previous response \`${previous.slice(0, 100)}\` is not on this connection: send the whole input, ` +
              'or name the latest response of a lane.',
            param: 'previous_response_id',
          },
        };
        return { refusal };
      }
      const { previous_response_id: _previous, ...rest } = fields;
      const body = { ...rest, input: [...entry.input, ...entry.output, ...itemsOf(fields.input)] };
      named.set(body, previous);
      return { body };
    },

    /** A call ended: what it completed becomes its lane's latest; a failed continuation forgets what it named. */
    settle(lane: string, body: Record<string, unknown>, bodyBytes: number, end: TurnEnd): void {
      const response = end.response;
      if (response !== null && typeof response.id === 'string' && Array.isArray(response.output)) {
        const output = response.output as unknown[];
        const bytes = bodyBytes + JSON.stringify(output).length;
        if (bytes <= MAX_HELD_BYTES) keep(lane, { id: response.id, input: itemsOf(body.input), output, bytes });
      } else if (end.failed) {
        const previous = named.get(body);
        if (previous !== undefined) forget(previous);
      }
    },

    /** A call with `generate: false`: a response with no output, held as its lane's latest. */
    prewarmed(lane: string, body: Record<string, unknown>, bodyBytes: number, now: number): Record<string, unknown> {
      const id = newId('resp_', now);
      keep(lane, { id, input: itemsOf(body.input), output: [], bytes: bodyBytes });
      return {
        id,
        object: 'response',
        created_at: Math.floor(now / 1000),
        status: 'completed',
        model: body.model ?? null,
        output: [],
        usage: {
          input_tokens: 0,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: 0,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: 0,
        },
      };
    },

    clear(): void {
      byId.clear();
      latest.clear();
      held = 0;
    },
  };
}
