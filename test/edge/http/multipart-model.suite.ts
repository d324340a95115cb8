import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ServiceError } from '../../../protocol/errors.ts';
import { createModelScan, multipartBoundary, type ModelScanOptions } from '../../../edge/http/multipart-model.ts';

const dirs: string[] = [];
after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function spillDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-multipart-'));
  dirs.push(dir);
  return dir;
}

// The real encoding Node's fetch (undici) sends, boundary and part headers included.
async function encode(fields: [string, string | Blob, string?][]): Promise<{ body: Buffer; contentType: string }> {
  const form = new FormData();
  for (const [name, value, filename] of fields) {
    if (typeof value === 'string') form.append(name, value);
    else form.append(name, value, filename);
  }
  const response = new Response(form);
  const contentType = response.headers.get('content-type') ?? '';
  assert.match(contentType, /^multipart\/form-data; boundary=/);
  return { body: Buffer.from(await response.arrayBuffer()), contentType };
}

const lines = (...parts: string[]): Buffer => Buffer.from(parts.join('\r\n'), 'utf8');
const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
const chunked = (body: Buffer, size: number): Buffer[] =>
  Array.from({ length: Math.ceil(body.length / size) }, (_, i) => body.subarray(i * size, (i + 1) * size));

async function collect(iterable: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of iterable) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Feeds chunks as the gateway will (stop once the model is known), then always disposes and checks the dir. */
async function run(contentType: string, chunks: Uint8Array[], options: Partial<ModelScanOptions> = {}) {
  const dir = spillDir();
  const scan = createModelScan(contentType, { spillDir: dir, ...options });
  try {
    let fed = 0;
    for (const chunk of chunks) {
      fed += chunk.length;
      if ((await scan.push(chunk)) !== null) break;
    }
    const model = await scan.end();
    return { model, fed, replayed: await collect(scan.replay()) };
  } finally {
    await scan.dispose();
    assert.deepEqual(readdirSync(dir), []);
  }
}

async function refused(promise: Promise<unknown>, param: string | null, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof ServiceError, String(err));
    assert.equal(err.code, 'INVALID_REQUEST');
    assert.equal(err.param, param);
    assert.match(err.message, pattern);
    return true;
  });
}

const audio = new Blob([randomBytes(200), '\r\n------formdata-undici-0\r\n--', randomBytes(50)]);

describe('multipartBoundary', () => {
  for (const [input, expected] of [
    ['multipart/form-data; boundary=abc123', 'abc123'],
    ['Multipart/Form-Data;BOUNDARY=abc', 'abc'],
    ['multipart/form-data; charset=utf-8; boundary="a b;c=d"', 'a b;c=d'],
    ['multipart/form-data; boundary="q\\"x"', 'q"x'],
    ['multipart/form-data; boundary=' + 'b'.repeat(70), 'b'.repeat(70)],
    ['multipart/form-data; boundary=' + 'b'.repeat(71), null],
    ['multipart/form-data; boundary=""', null],
    ['multipart/form-data; boundary="a\r\nb"', null],
    ['multipart/form-data; boundary="ends "', null],
    ['multipart/form-data; boundary=a; boundary=b', null],
    ['multipart/form-data', null],
    ['multipart/mixed; boundary=abc', null],
    ['application/json', null],
    ['', null],
    [undefined, null],
  ] as const) {
    it(`${JSON.stringify(input)} -> ${JSON.stringify(expected)}`, () =>
      assert.equal(multipartBoundary(input), expected));
  }
});

describe('createModelScan finds the model', () => {
  const orders = {
    'model first': [
      ['model', 'whisper-1'],
      ['file', audio, 'a.wav'],
      ['language', 'en'],
    ],
    'file first (the openai SDK order)': [
      ['file', audio, 'a.wav'],
      ['prompt', 'hi'],
      ['model', 'whisper-1'],
    ],
  } satisfies Record<string, [string, string | Blob, string?][]>;

  for (const [label, fields] of Object.entries(orders)) {
    it(`${label}, at every split point and byte by byte`, async () => {
      const { body, contentType } = await encode(fields);
      const splits = Array.from({ length: body.length + 1 }, (_, at) => [body.subarray(0, at), body.subarray(at)]);
      for (const chunks of [...splits, chunked(body, 1)]) {
        const { model, fed, replayed } = await run(contentType, chunks);
        assert.equal(model, 'whisper-1');
        assert.ok(replayed.equals(body.subarray(0, fed)), `replay of ${chunks.length} chunks`);
      }
    });
  }

  it('while the caller reuses one buffer for every chunk', async () => {
    const { body, contentType } = await encode(orders['file first (the openai SDK order)']);
    const scratch = new Uint8Array(7);
    const scan = createModelScan(contentType, { spillDir: spillDir(), memoryLimit: 100 });
    let fed = 0;
    try {
      for (const piece of chunked(body, 7)) {
        fed += piece.length;
        scratch.set(piece);
        const found = await scan.push(scratch.subarray(0, piece.length));
        scratch.fill(0x55);
        if (found !== null) break;
      }
      assert.ok((await collect(scan.replay())).equals(body.subarray(0, fed)));
    } finally {
      await scan.dispose();
    }
  });

  it('a quoted boundary, preamble, padding, folded and odd-case headers, a near-boundary value, epilogue', async () => {
    const body = lines(
      'preamble text --a b:c? not at a line start',
      '--a b:c? \t',
      'content-type: text/plain',
      'CONTENT-DISPOSITION: form-data; name=prompt',
      '',
      'say --a b:c? mid-line',
      '--a b:c?',
      'Content-Disposition: form-data;',
      '\tname="model"',
      '',
      'm\r\n--a b:c',
      '--a b:c?--',
      'epilogue',
    );
    const contentType = 'multipart/form-data; boundary="a b:c?"';
    for (let at = 0; at <= body.length; at++) {
      const { model, fed, replayed } = await run(contentType, [body.subarray(0, at), body.subarray(at)]);
      assert.equal(model, 'm\r\n--a b:c');
      assert.ok(replayed.equals(body.subarray(0, fed)));
    }
  });

  it('and stops buffering once it has, while still scanning what the caller keeps feeding', async () => {
    const { body, contentType } = await encode([
      ['model', 'dall-e-2'],
      ['image', new Blob([randomBytes(5000)]), 'i.png'],
    ]);
    const scan = createModelScan(contentType, { spillDir: spillDir() });
    try {
      const results = [];
      for (const chunk of chunked(body, 100)) results.push(await scan.push(chunk));
      const first = results.findIndex((model) => model !== null);
      assert.ok(first >= 0 && first < 5);
      assert.deepEqual(new Set(results.slice(first)), new Set(['dall-e-2']));
      assert.equal(scan.bufferedBytes(), (first + 1) * 100);
      assert.equal(await scan.end(), 'dall-e-2');
      assert.ok((await collect(scan.replay())).equals(body.subarray(0, (first + 1) * 100)));
    } finally {
      await scan.dispose();
    }
  });
});

describe('a 20 MB file-first upload in 64 KiB chunks', () => {
  it('keeps memory bounded, spills to a private file, replays the exact bytes and cleans up', async () => {
    const chunkSize = 64 * 1024;
    const memoryLimit = 4 * 1024 * 1024;
    const file = new Blob([randomBytes(20 * 1024 * 1024)]);
    const { body, contentType } = await encode([
      ['image', file, 'big.png'],
      ['prompt', 'a cat'],
      ['model', 'gpt-image-1'],
    ]);
    const dir = spillDir();
    const scan = createModelScan(contentType, { spillDir: dir });
    let peak = 0;
    let fed = 0;
    let model: string | null = null;
    const modes = new Set<number>();
    try {
      for (const chunk of chunked(body, chunkSize)) {
        fed += chunk.length;
        const pending = scan.push(chunk);
        peak = Math.max(peak, scan.bufferedBytes());
        model = await pending;
        peak = Math.max(peak, scan.bufferedBytes());
        for (const name of readdirSync(dir)) modes.add(statSync(join(dir, name)).mode & 0o777);
        if (model !== null) break;
      }
      assert.equal(model, 'gpt-image-1');
      assert.ok(peak <= memoryLimit + chunkSize, `peak ${peak}`);
      assert.ok(peak > memoryLimit - chunkSize, `peak ${peak}: the memory buffer was never filled`);
      assert.deepEqual([...modes], [0o600]);
      assert.equal(sha256(await collect(scan.replay())), sha256(body.subarray(0, fed)));
      assert.equal(sha256(await collect(scan.replay())), sha256(body.subarray(0, fed)), 'replay is re-iterable');
      assert.equal(await scan.end(), 'gpt-image-1');
    } finally {
      await scan.dispose();
    }
    assert.deepEqual(readdirSync(dir), []);
  });
});

describe('createModelScan refuses with INVALID_REQUEST', () => {
  const simple = 'multipart/form-data; boundary=XyZ';
  const part = (headers: string, content: string) => lines('--XyZ', headers, '', content, '--XyZ--', '');

  it('a body with no model field', async () => {
    const { body, contentType } = await encode([
      ['file', audio, 'a.wav'],
      ['prompt', 'x'],
    ]);
    await refused(run(contentType, [body]), 'model', /no model field/);
  });

  it('two model fields in the scanned prefix', async () => {
    const { body, contentType } = await encode([
      ['model', 'a'],
      ['model', 'b'],
      ['file', audio, 'a.wav'],
    ]);
    await refused(run(contentType, [body]), 'model', /more than one model field/);
  });

  it('a second model field found because the caller kept feeding', async () => {
    const { body, contentType } = await encode([
      ['model', 'a'],
      ['file', audio, 'a.wav'],
      ['model', 'b'],
    ]);
    const dir = spillDir();
    const scan = createModelScan(contentType, { spillDir: dir, memoryLimit: 64 });
    const models: (string | null)[] = [];
    const feedAll = async () => {
      for (const chunk of chunked(body, 16)) models.push(await scan.push(chunk));
    };
    await refused(feedAll(), 'model', /more than one/);
    assert.ok(models.includes('a'));
    await refused(scan.end(), 'model', /more than one/);
    await scan.dispose();
    assert.deepEqual(readdirSync(dir), []);
  });

  it('an oversized, empty, non-UTF-8 or file-valued model', async () => {
    const over = await encode([['model', 'x'.repeat(1025)]]);
    await assert.rejects(run(over.contentType, [over.body]), (err: unknown) => {
      assert.ok(err instanceof ServiceError && err.param === 'model' && /longer than 1024 bytes/.test(err.message));
      return !err.message.includes('xxxx');
    });
    const eight = await encode([['model', '12345678']]);
    assert.equal((await run(eight.contentType, [eight.body], { maxFieldBytes: 8 })).model, '12345678');
    const nine = await encode([['model', '123456789']]);
    await refused(run(nine.contentType, chunked(nine.body, 3), { maxFieldBytes: 8 }), 'model', /longer than 8 bytes/);
    const empty = await encode([['model', '']]);
    await refused(run(empty.contentType, [empty.body]), 'model', /empty/);
    const badUtf8 = Buffer.concat([
      lines('--XyZ', 'Content-Disposition: form-data; name="model"', '', ''),
      Buffer.from([0xff]),
      lines('', '--XyZ--'),
    ]);
    await refused(run(simple, [badUtf8]), 'model', /UTF-8/);
    const asFile = await encode([['model', new Blob(['gpt-4o']), 'model.txt']]);
    await refused(run(asFile.contentType, [asFile.body]), 'model', /not a file/);
  });

  it('a Content-Type that is not multipart/form-data with a boundary', () => {
    for (const contentType of ['text/plain', 'multipart/form-data', 'application/json; boundary=x', '']) {
      assert.throws(
        () => createModelScan(contentType, { spillDir: spillDir() }),
        (err: unknown) => {
          assert.ok(err instanceof ServiceError && err.code === 'INVALID_REQUEST' && err.param === null);
          return /multipart\/form-data/.test(err.message);
        },
      );
    }
  });

  it('garbage: small at end(), large as soon as 16 KiB pass without a boundary line', async () => {
    await refused(run(simple, [randomBytes(1000)]), null, /no boundary line/);
    const dir = spillDir();
    const scan = createModelScan(simple, { spillDir: dir, memoryLimit: 0 });
    const feed = async () => {
      for (const chunk of chunked(randomBytes(1024 * 1024), 4096)) await scan.push(chunk);
    };
    await refused(feed(), null, /first 16 KiB/);
    assert.equal(scan.bufferedBytes(), 0);
    await scan.dispose();
    assert.deepEqual(readdirSync(dir), []);
  });

  for (const [label, body, pattern] of [
    ['a part without Content-Disposition', part('Content-Type: text/plain', 'x'), /no Content-Disposition header/],
    [
      'a part without a name',
      part('Content-Disposition: form-data; filename="a.png"', 'x'),
      /no Content-Disposition name/,
    ],
    ['a part with no headers at all', part('', 'x'), /no Content-Disposition header/],
    ['a non-form-data disposition', part('Content-Disposition: attachment; name="model"', 'x'), /must be form-data/],
    [
      'two Content-Disposition headers',
      part('Content-Disposition: form-data; name=a\r\nContent-Disposition: form-data; name=model', 'x'),
      /two Content-Disposition/,
    ],
    ['a header line without a colon', part('Content-Disposition form-data', 'x'), /not "Name: value"/],
    [
      'a header block over 16 KiB',
      part(`Content-Disposition: form-data; name=a\r\nX-Pad: ${'p'.repeat(16 * 1024)}`, 'x'),
      /over 16 KiB/,
    ],
    [
      'a boundary line with trailing junk',
      lines('--XyZjunk', 'Content-Disposition: form-data; name=model', '', 'm', '--XyZ--'),
      /line break/,
    ],
    [
      'a body cut inside a part',
      lines('--XyZ', 'Content-Disposition: form-data; name=file; filename=a', '', 'partial'),
      /ends inside a part/,
    ],
    [
      'a body cut inside the model value',
      lines('--XyZ', 'Content-Disposition: form-data; name=model', '', 'gpt'),
      /ends inside a part/,
    ],
    [
      'LF-only line breaks',
      Buffer.from('--XyZ\nContent-Disposition: form-data; name=model\n\nm\n--XyZ--\n'),
      /line break/,
    ],
  ] as const) {
    it(label, async () => {
      await refused(run(simple, [body]), null, pattern);
      await refused(run(simple, chunked(body, 5)), null, pattern);
    });
  }

  it('quoting at most 100 characters of client input', async () => {
    await assert.rejects(
      run(simple, [part(`Content-Disposition: ${'y'.repeat(5000)}; name=model`, 'x')]),
      (err: unknown) => {
        assert.ok(err instanceof ServiceError && /must be form-data/.test(err.message));
        assert.ok(err.message.includes('y'.repeat(100)));
        return !err.message.includes('y'.repeat(101));
      },
    );
  });
});

describe('dispose', () => {
  it('is idempotent, refuses later use, and removes a file whose write was still in flight', async () => {
    const { body, contentType } = await encode([
      ['file', audio, 'a.wav'],
      ['model', 'm'],
    ]);
    const dir = spillDir();
    const scan = createModelScan(contentType, { spillDir: dir, memoryLimit: 0 });
    const pushed = scan.push(body.subarray(0, 100));
    const disposed = scan.dispose();
    assert.equal(await pushed, null);
    await Promise.all([disposed, scan.dispose()]);
    assert.deepEqual(readdirSync(dir), []);
    await assert.rejects(scan.push(body.subarray(100)), /disposed/);
    assert.throws(() => scan.replay(), /disposed/);
  });

  it('gives each spill file its own unguessable name', async () => {
    const dir = spillDir();
    const scans = [1, 2].map(() =>
      createModelScan('multipart/form-data; boundary=b', { spillDir: dir, memoryLimit: 0 }),
    );
    for (const scan of scans) await scan.push(Buffer.from('--b\r\n'));
    const names = readdirSync(dir);
    assert.equal(names.length, 2);
    for (const name of names) assert.match(name, /^switchyard-upload-[0-9a-f]{32}\.part$/);
    await Promise.all(scans.map((scan) => scan.dispose()));
    assert.deepEqual(readdirSync(dir), []);
  });
});

describe('model range and splice', () => {
  it('locates the model value at every split point, and splice swaps it for the upstream name', async () => {
    const { splice } = await import('../../../edge/gateway/multipart.ts');
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(300).fill(7)]), 'a.wav');
    form.append('model', 'openai/whisper-1');
    form.append('language', 'en');
    const response = new Response(form);
    const contentType = response.headers.get('content-type')!;
    const body = new Uint8Array(await response.arrayBuffer());
    const spillDir = mkdtempSync(join(tmpdir(), 'range-'));
    for (let split = 1; split < body.length; split++) {
      const scan = createModelScan(contentType, { spillDir });
      try {
        let model = await scan.push(body.subarray(0, split));
        // What the scan never saw, the relay forwards straight from the socket after the replay.
        const unread = model === null ? new Uint8Array(0) : body.subarray(split);
        model ??= await scan.push(body.subarray(split));
        assert.equal(model, 'openai/whisper-1');
        const range = scan.modelRange()!;
        assert.equal(
          Buffer.from(body.subarray(range.start, range.end)).toString(),
          'openai/whisper-1',
          `split ${split}`,
        );
        const out: Uint8Array[] = [];
        for await (const piece of splice(scan.replay(), range.start, range.end, new TextEncoder().encode('whisper-1')))
          out.push(piece);
        out.push(unread);
        const rewritten = Buffer.concat(out).toString('latin1');
        assert.equal(rewritten, Buffer.from(body).toString('latin1').replace('openai/whisper-1', 'whisper-1'));
      } finally {
        await scan.dispose();
      }
    }
  });
});
