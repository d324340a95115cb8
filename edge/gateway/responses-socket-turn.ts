import type { ResponseWriter } from '../http/types.ts';
import { createSseBlockReader, parseSseBlock, type SseEvent } from '../../workers/shared/sse.ts';

// One call's stream sent over a WebSocket (responses-socket.ts): the route writes its SSE answer here, and each
// event's data goes out as one text message, with the call's `stream_id` when it names a lane. The terminal
// event's response is kept for the connection's continuations.

/** How a call's stream ended: the response it completed (or left incomplete), and whether it failed. */
export interface TurnEnd {
  response: Record<string, unknown> | null;
  failed: boolean;
}

export interface TurnWriterOptions {
  lane: string;
  /** False when the client's buffer is over its mark. */
  send(text: string): boolean;
  done(end: TurnEnd): void;
}

export interface TurnWriter extends ResponseWriter {
  /** The client's buffer has room again. */
  drained(): void;
  /** The client left: the route is told (its abort callback), and the call ends. */
  clientLeft(): void;
}

const TERMINAL = /^\{\s*"type"\s*:\s*"(response\.(?:completed|incomplete|failed)|error)"/;

export function createTurnWriter({ lane, send, done }: TurnWriterOptions): TurnWriter {
  let writable: (() => void) | null = null;
  let routeAbort: (() => void) | null = null;
  let full = false;
  let finished = false;
  const end: TurnEnd = { response: null, failed: false };

  const onEvent = (event: SseEvent | null): void => {
    if (event === null || event.data === '' || event.data === '[DONE]') return;
    let text = event.data;
    const terminal = TERMINAL.exec(text)?.[1];
    if (terminal !== undefined || lane !== '') {
      const parsed = parse(text);
      if (parsed !== null) {
        if (terminal === 'response.completed' || terminal === 'response.incomplete')
          end.response = (parsed.response as Record<string, unknown> | undefined) ?? null;
        if (terminal === 'response.failed' || terminal === 'error') end.failed = true;
        if (lane !== '') text = JSON.stringify({ ...parsed, stream_id: lane });
      }
    }
    if (!send(text)) full = true;
  };
  const reader = createSseBlockReader((_bytes, _text, event) => onEvent(event));

  const finish = () => {
    if (finished) return;
    finished = true;
    done(end);
  };
  const push = (chunk: Uint8Array | string) =>
    reader.push(typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk);

  return {
    head() {},
    write(chunk) {
      full = false;
      push(chunk);
      return !full;
    },
    end(chunk, failed) {
      if (chunk !== undefined) push(chunk);
      // An unterminated last event is still the upstream's last word.
      const rest = reader.end();
      if (rest !== null) onEvent(parseSseBlock(Buffer.from(rest).toString('utf8')));
      if (failed === true) end.failed = true;
      finish();
    },
    abort() {
      end.failed = true;
      finish();
    },
    onWritable: (cb) => void (writable = cb),
    onAbort: (cb) => void (routeAbort = cb),
    drained() {
      if (!full) return;
      full = false;
      writable?.();
    },
    clientLeft() {
      routeAbort?.();
      end.failed = true;
      finish();
    },
  };
}

function parse(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
