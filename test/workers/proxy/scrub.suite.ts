import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scrubHeaders, scrubTarget, scrubWhole, streamScrubber, withholdEchoes } from '../../../workers/proxy/scrub.ts';
import type { UpstreamModel } from '../../../protocol/providers.ts';

// The stored credential, masked out of relayed answers: whole bodies, and streams whatever the upstream's
// writes did to it.

const KEY = 'sk-proj-Echo3dKey_abcdefghijklmnop';
const SECRET = scrubTarget(KEY)!;
const echo = (key: string) => `data: {"echo":{"authorization":"Bearer ${key}"}}\n\n`;

/** Everything a stream scrubber passes on for these chunks, as text. */
function streamed(chunks: (string | Buffer)[], secret: Buffer | null = SECRET): string {
  const scrubber = streamScrubber(secret)!;
  const out: Uint8Array[] = chunks.map((c) => scrubber.push(typeof c === 'string' ? Buffer.from(c, 'latin1') : c));
  const tail = scrubber.end();
  if (tail !== null) out.push(tail);
  return Buffer.concat(out).toString('latin1');
}

describe('scrubTarget', () => {
  it('nothing to search for without a credential or with a placeholder under 8 bytes', () => {
    assert.equal(scrubTarget(null), null);
    assert.equal(scrubTarget('none'), null);
    assert.equal(scrubTarget('ollama'), null);
    assert.deepEqual(scrubTarget('12345678'), Buffer.from('12345678'));
    assert.equal(streamScrubber(null), null);
  });
});

describe('scrubWhole', () => {
  it('returns the very body when the credential is not in it', () => {
    const body = Buffer.from('{"id":"chatcmpl-1","choices":[]}');
    assert.equal(scrubWhole(body, SECRET), body);
    assert.equal(scrubWhole(body, null), body);
  });

  it('masks every occurrence, adjacent ones too, in a buffer of its own', () => {
    const body = Buffer.from(JSON.stringify({ a: `Bearer ${KEY}`, b: `${KEY}${KEY}`, c: KEY.slice(0, 20) }));
    const out = scrubWhole(body, SECRET);
    assert.equal(
      out.toString(),
      JSON.stringify({ a: 'Bearer [redacted]', b: '[redacted][redacted]', c: KEY.slice(0, 20) }),
    );
    assert.equal(out.byteOffset, 0);
    assert.equal(out.buffer.byteLength, out.byteLength, 'transferable as it is');
  });
});

describe('scrubHeaders', () => {
  it('masks the credential in relayed header values, and returns the same object when none holds it', () => {
    const clean = { 'content-type': 'application/json', 'x-ratelimit-remaining-requests': '99' };
    assert.equal(scrubHeaders(clean, KEY), clean);
    assert.equal(scrubHeaders(clean, null), clean);
    assert.deepEqual(scrubHeaders({ ...clean, 'x-ratelimit-echo': `Bearer ${KEY}` }, KEY), {
      ...clean,
      'x-ratelimit-echo': 'Bearer [redacted]',
    });
  });
});

describe('streamScrubber', () => {
  it('masks a credential cut in two at every possible place', () => {
    const text = echo(KEY) + echo(KEY);
    const want = echo('[redacted]') + echo('[redacted]');
    const start = text.indexOf(KEY);
    for (let cut = start; cut <= start + KEY.length; cut++) {
      assert.equal(streamed([text.slice(0, cut), text.slice(cut)]), want, `cut at ${cut - start}`);
    }
  });

  it('masks a credential spread over many small writes, one byte each', () => {
    const text = echo(KEY);
    assert.equal(streamed([...text]), echo('[redacted]'));
    const third = Math.floor(KEY.length / 3);
    const at = text.indexOf(KEY);
    assert.equal(
      streamed([text.slice(0, at + third), text.slice(at + third, at + 2 * third), text.slice(at + 2 * third)]),
      echo('[redacted]'),
    );
  });

  it('holds back nothing when the chunk cannot end in the start of the credential', () => {
    const scrubber = streamScrubber(SECRET)!;
    const chunk = Buffer.from(echo('not the key'));
    assert.equal(scrubber.push(chunk), chunk, 'the same bytes, passed on at once');
    assert.equal(scrubber.end(), null);
  });

  it('holds back exactly the tail that begins the credential, and passes the rest at once', () => {
    const scrubber = streamScrubber(SECRET)!;
    const out = scrubber.push(Buffer.from('data: {"x":"Bearer sk-pro'));
    assert.equal(Buffer.from(out).toString(), 'data: {"x":"Bearer ');
    assert.equal(
      Buffer.from(scrubber.push(Buffer.from('fit"}\n\n'))).toString(),
      'sk-profit"}\n\n',
      'not the key after all: released',
    );
  });

  it('a stream that ends inside the credential masks the part it held; a short held tail passes', () => {
    assert.equal(streamed([`data: ${KEY.slice(0, 12)}`]), 'data: [redacted]');
    assert.equal(streamed(['data: s', 'k-']), 'data: sk-');
  });

  it('finds a credential that overlaps itself', () => {
    const secret = scrubTarget('abababab-c')!;
    assert.equal(streamed(['xxabababa', 'babab-c yy'], secret), 'xxabab[redacted] yy');
    assert.equal(streamed(['xxababababab', '-c yy'], secret), 'xxab[redacted] yy');
  });

  it('gives the bytes scrubWhole gives, whatever the chunking (generated)', () => {
    let seed = 7;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let round = 0; round < 300; round++) {
      const pieces: string[] = [];
      for (let i = 0; i < 6; i++)
        pieces.push(
          random(3) === 0 ? KEY : random(2) === 0 ? KEY.slice(0, 1 + random(KEY.length - 1)) : 'x'.repeat(random(40)),
        );
      const text = Buffer.from(pieces.join('|'));
      const chunks: Buffer[] = [];
      for (let at = 0; at < text.length; ) {
        const size = 1 + random(50);
        chunks.push(text.subarray(at, at + size));
        at += size;
      }
      // '|' is not in the key and no prefix of the key ends it, so only a partial last piece is held at the end.
      const last = pieces.at(-1)!;
      const partial = last !== KEY && KEY.startsWith(last) && last !== '' ? last : '';
      const whole = scrubWhole(text, SECRET).toString('latin1');
      const want = partial.length >= 4 ? whole.slice(0, -partial.length) + '[redacted]' : whole;
      assert.equal(streamed(chunks), want, `round ${round}`);
    }
  });
});

describe('withholdEchoes', () => {
  const model = (upstreamModelId: string, displayName: string | null = null): UpstreamModel => ({
    upstreamModelId,
    displayName,
    created: null,
    contextWindow: null,
    families: [],
  });

  it('leaves out a model whose ID or display name holds the credential, and counts them', () => {
    const key = 'sk-echoed-0123456789';
    const listed = [model('a'), model(`x-${key}`), model('b', `for ${key}`), model(key), model('c', 'plain')];
    const out = withholdEchoes(listed, key);
    assert.deepEqual(
      out.models.map((m) => m.upstreamModelId),
      ['a', 'c'],
    );
    assert.equal(out.withheld, 3);
  });

  it('keeps everything for no credential or a placeholder too short to search for', () => {
    const listed = [model('none-7b'), model('x')];
    assert.deepEqual(withholdEchoes(listed, null), { models: listed, withheld: 0 });
    assert.deepEqual(withholdEchoes(listed, 'none'), { models: listed, withheld: 0 });
  });
});
