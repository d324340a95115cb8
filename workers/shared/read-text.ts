import type { Dispatcher } from 'undici';

// An upstream body read as text with a bound: the provider model lists (list-models.ts) and Gauge's hosted
// collectors (workers/gauge/collectors/hosted-http.ts) both read answers of providers they do not control.

/** Reads the body up to `max` bytes; a larger one is abandoned, not buffered. */
export async function readText(
  body: Dispatcher.ResponseData['body'],
  max: number,
): Promise<{ text: string; complete: boolean }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > max) {
      body.destroy();
      return { text: Buffer.concat(chunks).toString('utf8'), complete: false };
    }
    chunks.push(chunk);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), complete: true };
}
