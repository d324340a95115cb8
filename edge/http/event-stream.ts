import { sseFrame, type Subscriber } from '../../protocol/events.ts';
import type { ResponseWriter } from './types.ts';

// Writes a bus subscription to a client as text/event-stream. Frames are taken from the subscriber only while
// the socket accepts them; while it does not, they wait in the subscriber's bounded queue, and a client that
// stays behind past that bound is dropped by the bus (it gets a last `dropped` event). A comment every
// `keepAliveMs` keeps proxies and clients from timing out an idle stream.

export const KEEP_ALIVE_MS = 15_000;

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  'x-accel-buffering': 'no',
};

export function streamEvents(out: ResponseWriter, sub: Subscriber, keepAliveMs: number = KEEP_ALIVE_MS): void {
  let blocked = false;
  let over = false;
  let timer: NodeJS.Timeout | null = null;

  const stop = () => {
    over = true;
    if (timer !== null) clearInterval(timer);
    timer = null;
  };
  const write = (chunk: string) => {
    if (!out.write(chunk)) blocked = true;
  };
  const pump = () => {
    if (over) return;
    const end = sub.ended();
    if (blocked) {
      // A full socket cannot take a last event: a dropped client (or one still behind at shutdown) is cut off.
      if (end === 'dropped' || end === 'closed') {
        stop();
        sub.close();
        out.abort();
      } else sub.onReady(pump);
      return;
    }
    const frames = sub.take();
    if (frames.length > 0) write(frames.join(''));
    if (end !== null) {
      stop();
      sub.close();
      out.end(
        end === 'dropped'
          ? sseFrame('dropped', {
              message: 'This client read events too slowly and was dropped; reconnect with Last-Event-ID to resume.',
            })
          : undefined,
      );
      return;
    }
    sub.onReady(pump);
  };

  out.onAbort(() => {
    stop();
    sub.close();
  });
  out.onWritable(() => {
    blocked = false;
    pump();
  });
  out.head(200, { ...SSE_HEADERS });
  // The head leaves with the first bytes: a comment now, so a client sees the stream open before any event.
  write(': open\n\n');
  timer = setInterval(() => {
    if (!blocked && !over) write(': keep-alive\n\n');
  }, keepAliveMs);
  timer.unref();
  pump();
}
