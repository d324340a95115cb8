import { open } from 'node:fs/promises';
import { CollectorError } from '../types.ts';
import type { FoundFile } from './discover.ts';

// Reads only the bytes a file gained since last time. The cursor stops after the last complete line, so a
// line the agent is still writing is read again, whole, next time; a file with another identity (replaced,
// rotated) or shorter than the cursor (truncated) is read from the start.

const CHUNK = 1 << 20;
/** Longer lines (a giant tool result) are skipped, counted, never buffered whole. */
export const MAX_LINE = 8 << 20;

export interface Cursor {
  /** dev:ino of the file the offset belongs to. */
  d: string;
  /** Offset just after the last complete line consumed. */
  o: number;
  /** 1 while inside an over-long line whose end has not been seen yet. */
  skip?: 1;
}

export interface TailOutcome {
  cursor: Cursor;
  bytesRead: number;
  restarted: boolean;
  longLines: number;
}

export async function readNewLines(
  file: FoundFile,
  previous: Cursor | undefined,
  budget: number,
  signal: AbortSignal,
  onLine: (line: string) => void,
): Promise<TailOutcome> {
  const restarted = previous !== undefined && (previous.d !== file.identity || file.size < previous.o);
  const start = previous === undefined || restarted ? 0 : previous.o;
  let skip = !restarted && previous?.skip === 1;
  const outcome: TailOutcome = {
    cursor: { d: file.identity, o: start, ...(skip ? { skip: 1 as const } : {}) },
    bytesRead: 0,
    restarted,
    longLines: 0,
  };
  // Bytes appended while we read belong to the next collect: stop at the size discovery saw. A budget
  // smaller than one line still moves past it, so a file always makes progress.
  const end = Math.min(file.size, start + Math.max(budget, MAX_LINE + 1));
  if (end <= start) return outcome;

  const handle = await open(file.path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(CHUNK);
    let position = start;
    let committed = start;
    let pending: Buffer[] = [];
    let pendingLength = 0;
    while (position < end) {
      if (signal.aborted) throw new CollectorError('timeout', 'log reading ran out of time');
      const { bytesRead } = await handle.read(buffer, 0, Math.min(CHUNK, end - position), position);
      if (bytesRead === 0) break;
      outcome.bytesRead += bytesRead;
      let from = 0;
      for (let nl = buffer.indexOf(10, from); nl !== -1 && nl < bytesRead; nl = buffer.indexOf(10, from)) {
        if (!skip) {
          if (pendingLength + nl - from > MAX_LINE) outcome.longLines++;
          else {
            const bytes =
              pendingLength === 0 ? buffer.subarray(from, nl) : Buffer.concat([...pending, buffer.subarray(from, nl)]);
            const text = bytes.toString('utf8');
            onLine(text.endsWith('\r') ? text.slice(0, -1) : text);
          }
        }
        skip = false;
        pending = [];
        pendingLength = 0;
        from = nl + 1;
        committed = position + from;
      }
      const rest = bytesRead - from;
      if (!skip && rest > 0) {
        if (pendingLength + rest > MAX_LINE) {
          skip = true;
          outcome.longLines++;
          pending = [];
          pendingLength = 0;
        } else {
          pending.push(Buffer.from(buffer.subarray(from, bytesRead)));
          pendingLength += rest;
        }
      }
      position += bytesRead;
    }
    // Inside an over-long line the bytes seen so far are dropped for good; otherwise the partial last line
    // is left in the file for next time.
    outcome.cursor = skip ? { d: file.identity, o: position, skip: 1 } : { d: file.identity, o: committed };
    return outcome;
  } finally {
    await handle.close();
  }
}
