// The newest log lines, kept in memory for GET /v1/logs and `switchyard logs`: a ring bounded by line count
// and by characters, each line numbered so that a follower asks for what came after the last one it saw.
// Lines are the JSON the log writes (which never holds a header, a body or a secret), kept as text; they are
// parsed only when asked for.

export interface TailLine {
  seq: number;
  line: string;
}

export interface LogTail {
  push(line: string): void;
  /**
   * Up to `limit` lines, oldest first: with `after`, the first ones numbered above it (and how many lines after
   * it are no longer kept); without, the newest.
   */
  read(
    after: number | null,
    limit: number,
  ): { lines: TailLine[]; lastSeq: number; oldestSeq: number | null; hasMore: boolean; lost: number };
}

/** A line longer than this is kept as a stub: one huge line must not push out a thousand others. */
const MAX_LINE = 16 * 1024;

export function createLogTail(maxLines = 1000, maxChars = 1 << 20): LogTail {
  // A circular buffer: the log's hot path pushes one line per request, and must not move the others.
  const slots: (TailLine | undefined)[] = new Array(maxLines);
  let first = 0;
  let count = 0;
  let chars = 0;
  let seq = 0;
  const at = (i: number) => slots[(first + i) % maxLines]!;
  const dropOldest = () => {
    chars -= at(0).line.length;
    slots[first] = undefined;
    first = (first + 1) % maxLines;
    count--;
  };
  return {
    push(chunk) {
      // A write may carry several lines; each is kept on its own.
      for (const raw of chunk.split('\n')) {
        if (raw === '') continue;
        const line =
          raw.length <= MAX_LINE ? raw : JSON.stringify({ msg: 'a log line too long to keep', chars: raw.length });
        if (count === maxLines) dropOldest();
        slots[(first + count) % maxLines] = { seq: ++seq, line };
        count++;
        chars += line.length;
        while (chars > maxChars && count > 1) dropOldest();
      }
    },
    read(after, limit) {
      let start = count;
      while (start > 0 && at(start - 1).seq > (after ?? -1)) start--;
      // Without `after` (null) the newest lines; with it, the next ones in order, so a follower misses none.
      const from = after === null ? Math.max(0, count - limit) : start;
      const to = Math.min(count, from + limit);
      const lines: TailLine[] = [];
      for (let i = from; i < to; i++) lines.push(at(i));
      const oldestSeq = count > 0 ? at(0).seq : null;
      const lost = after === null || oldestSeq === null ? 0 : Math.max(0, oldestSeq - after - 1);
      return { lines, lastSeq: seq, oldestSeq, hasMore: to < count, lost };
    },
  };
}
