import { tooLarge, type App } from '../http/app.ts';
import type { EdgeRequestHead, EdgeResponse } from '../http/types.ts';
import { prewarmEvents } from './responses-socket-prewarm.ts';
import type { createContinuations } from './responses-socket-state.ts';
import { createTurnWriter, type TurnEnd, type TurnWriter } from './responses-socket-turn.ts';
import { errorFrame, wholeAnswerFrame } from './responses-socket-frames.ts';

// One `response.create` of a connection (responses-socket.ts) as a gateway call: its body as POST /v1/responses
// takes it (a held previous response's input and output first, `stream: true`), run through the app with the
// upgrade's headers, and its answer sent back as messages.

export interface CallRunnerDeps {
  app: Pick<App, 'prepare'>;
  /** The upgrade's headers without the connection's own, and a JSON content type. */
  headers: Record<string, string>;
  upgrade: EdgeRequestHead;
  send(text: string): boolean;
  continuations: ReturnType<typeof createContinuations>;
  now(): number;
  closed(): boolean;
}

export function createCallRunner(deps: CallRunnerDeps) {
  const { app, headers, upgrade, send, continuations } = deps;
  /** Writers of calls whose stream is under way: told when the client's buffer drains, or the client leaves. */
  const writers = new Set<TurnWriter>();
  /** The calls under way, to be told when the client leaves before their answer has begun. */
  const aborts = new Set<() => void>();

  async function run(lane: string, create: Record<string, unknown>): Promise<void> {
    const { type: _type, stream_id: _lane, generate, ...fields } = create;
    const expanded = continuations.expand(fields);
    if ('refusal' in expanded) return void send(errorFrame(expanded.refusal.status, expanded.refusal.error, lane));
    const { body } = expanded;
    const text = JSON.stringify({ ...body, stream: true });
    if (generate === false) {
      for (const event of prewarmEvents(continuations.prewarmed(lane, body, text.length, deps.now()), lane))
        send(event);
      return;
    }
    const bytes = Buffer.from(text);
    const prepared = app.prepare({ method: 'POST', path: '/v1/responses', query: '', headers, peer: upgrade.peer });
    aborts.add(prepared.abort);
    try {
      const limit = prepared.bodyLimit;
      const answer =
        limit !== null && bytes.length > limit ? prepared.fail(tooLarge(limit)) : await prepared.run(bytes);
      continuations.settle(lane, body, bytes.length, await deliver(answer, lane));
    } finally {
      aborts.delete(prepared.abort);
    }
  }

  /** Sends an answer: a stream's events as they come, any other answer as one message. */
  function deliver(answer: EdgeResponse, lane: string): Promise<TurnEnd> {
    if (deps.closed()) return Promise.resolve({ response: null, failed: true });
    const sse = (answer.headers['content-type'] ?? '').includes('text/event-stream');
    if (answer.stream === undefined && !sse) {
      send(wholeAnswerFrame(answer, lane));
      return Promise.resolve({ response: null, failed: answer.status >= 400 });
    }
    return new Promise((resolve) => {
      const writer = createTurnWriter({
        lane,
        send,
        done(end) {
          writers.delete(writer);
          resolve(end);
        },
      });
      writers.add(writer);
      // A stream whose end came with its head is answered whole, its events in one body.
      if (answer.stream === undefined) writer.end(answer.body);
      else answer.stream(writer);
    });
  }

  return {
    run,
    drained() {
      for (const writer of writers) writer.drained();
    },
    clientLeft() {
      for (const writer of [...writers]) writer.clientLeft();
      for (const abort of [...aborts]) abort();
    },
  };
}
