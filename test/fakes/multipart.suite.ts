import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { boundaryOf, summarizeMultipart } from './multipart.ts';
import * as openaiFake from './openai.ts';

// The streaming multipart reader: correct whatever the chunking (a delimiter split across reads), and able
// to take a large upload through a fake without holding it.

const BOUNDARY = '----fakeBoundary7MA4YWxkTrZu0gW';

function body(fileBytes: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(
      `preamble to ignore\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n`,
    ),
    Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: ` +
        `audio/wav\r\n\r\n`,
    ),
    fileBytes,
    Buffer.from(`\r\n--${BOUNDARY}--\r\nepilogue`),
  ]);
}

async function* inChunks(data: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let at = 0; at < data.length; at += size) yield data.subarray(at, at + size);
}

describe('summarizeMultipart', () => {
  // Bytes that look like the start of a delimiter inside the file must not end the part.
  const file = Buffer.concat([
    Buffer.from(`x\r\n--${BOUNDARY.slice(0, 10)}y\r\n-`),
    openaiFake.pseudoRandomBytes('file', 5000),
  ]);
  const expected = [
    { name: 'model', filename: null, contentType: null, size: 9, sha256: null, value: 'whisper-1' },
    {
      name: 'file',
      filename: 'a.wav',
      contentType: 'audio/wav',
      size: file.length,
      sha256: createHash('sha256').update(file).digest('hex'),
      value: null,
    },
  ];

  for (const size of [1, 2, 7, 61, 4096, 1 << 20]) {
    it(`summarizes the same parts when read ${size} bytes at a time`, async () => {
      assert.deepEqual(await summarizeMultipart(inChunks(body(file), size), BOUNDARY), expected);
    });
  }

  it('rejects a body cut before its closing delimiter', async () => {
    const cut = body(file).subarray(0, 300);
    await assert.rejects(summarizeMultipart(inChunks(cut, 64), BOUNDARY), /closing delimiter/);
  });

  it('reads the boundary from the content type, quoted or not', () => {
    assert.equal(boundaryOf(`multipart/form-data; boundary=${BOUNDARY}`), BOUNDARY);
    assert.equal(boundaryOf('multipart/form-data; boundary="a b"'), 'a b');
    assert.equal(boundaryOf('application/json'), null);
  });
});

describe('a large upload through the transcription route', () => {
  let fake: openaiFake.OpenAIFake;
  before(async () => {
    fake = await openaiFake.start();
  });
  after(() => fake.close());

  it('hashes 64 MiB streamed in 64 KiB pieces and answers the transcript', async () => {
    const pieces = 1024;
    const piece = (i: number): Buffer => openaiFake.pseudoRandomBytes(`piece ${i}`, 64 * 1024);
    const hash = createHash('sha256');
    const head = Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; ` +
        `name="model"\r\n\r\ngpt-4o-transcribe\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; ` +
        `filename="big.mp3"\r\n\r\n`,
    );
    let i = -1;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (i === -1) controller.enqueue(head);
        else if (i < pieces) {
          const bytes = piece(i);
          hash.update(bytes);
          controller.enqueue(bytes);
        } else {
          controller.enqueue(Buffer.from(`\r\n--${BOUNDARY}--\r\n`));
          controller.close();
        }
        i++;
      },
    });
    const response = await fetch(`${fake.baseUrl}/audio/transcriptions`, {
      method: 'POST',
      headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    assert.equal(response.status, 200);
    assert.equal(((await response.json()) as { text: string }).text, openaiFake.DEFAULT_OUTPUT.transcript);
    const recorded = fake.requests.at(-1);
    assert.equal(recorded?.body, '');
    const upload = recorded?.parts?.find((p) => p.name === 'file');
    assert.deepEqual([upload?.size, upload?.sha256], [pieces * 64 * 1024, hash.digest('hex')]);
  });

  it('answers a malformed multipart body with a 400 in OpenAI’s shape', async () => {
    const response = await fetch(`${fake.baseUrl}/audio/transcriptions`, {
      method: 'POST',
      headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
      body: `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1`,
    });
    assert.equal(response.status, 400);
    assert.equal(((await response.json()) as { error: { type: string } }).error.type, 'invalid_request_error');
  });
});
