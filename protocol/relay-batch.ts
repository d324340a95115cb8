import type { FromWorker, ToWorker } from './relay.ts';

// How a batch of relay messages crosses between the edge and a relay worker when none of its buffers is
// transferred: the messages as JSON text, which clones for less than their object graph, with the longer
// bodies they carry as text beside it in an array of strings. Inside the JSON a body is escaped on one side
// and unescaped on the other: ~40 us of the edge's time alone for a 25 KB request body, against ~4 us beside
// it (node micro, a real worker receiving). A short body stays inside: the array costs more than it saves.

const ASIDE_MIN = 512;

export interface TextBatch {
  json: string;
  /** The text bodies, in order; in `json` each body is its index here. */
  texts: string[];
}

type Message = ToWorker | FromWorker;

/** The body a message carries, if it is one that may go aside: a start's request, a whole answer. */
const bodyOf = (m: Message): unknown => (m.t === 'start' ? m.req.body : m.t === 'whole' ? m.body : null);

function setBody(m: Message, body: string | number): void {
  // The index stands in for the text only inside the JSON (see packBatch and unpackBatch).
  if (m.t === 'start') (m.req as { body: unknown }).body = body;
  else if (m.t === 'whole') (m as { body: unknown }).body = body;
}

/**
 * The batch as JSON text, with its longer text bodies beside it when it has any. The messages are left as they were.
 */
export function packBatch(batch: readonly Message[]): TextBatch | string {
  const texts: string[] = [];
  const moved: Message[] = [];
  for (const m of batch) {
    const body = bodyOf(m);
    if (typeof body !== 'string' || body.length < ASIDE_MIN) continue;
    setBody(m, texts.length);
    texts.push(body);
    moved.push(m);
  }
  if (texts.length === 0) return JSON.stringify(batch);
  let json: string;
  try {
    json = JSON.stringify(batch);
  } finally {
    // The edge keeps a start's request (a route pack resends it), so every body is put back.
    moved.forEach((m, i) => setBody(m, texts[i]!));
  }
  return { json, texts };
}

export function unpackBatch<T extends Message>(packed: TextBatch | string): T[] {
  if (typeof packed === 'string') return JSON.parse(packed) as T[];
  const batch = JSON.parse(packed.json) as T[];
  for (const m of batch) {
    const at = bodyOf(m);
    if (typeof at === 'number') setBody(m, packed.texts[at]!);
  }
  return batch;
}
