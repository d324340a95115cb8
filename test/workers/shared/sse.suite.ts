import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  createSseBlockReader,
  createSseParser,
  createSseSplitter,
  parseSseBlock,
  type SseEvent,
} from '../../../workers/shared/sse.ts';
import { bytes, chatStream, cuts, messagesStream, TEXT_CHOICES, text } from '../proxy/usage/fixtures.ts';

function parseAll(chunks: (string | Uint8Array)[]): SseEvent[] {
  const parser = createSseParser();
  const events: SseEvent[] = [];
  for (const chunk of chunks) events.push(...parser.push(chunk));
  events.push(...parser.end());
  return events;
}

const fields = (events: SseEvent[]) => events.map(({ event, data }) => ({ event, data }));

describe('parseSseBlock', () => {
  it('joins data lines with LF and strips one space after the colon', () => {
    assert.deepEqual(parseSseBlock('data: first\ndata:second\ndata:  third\n\n'), {
      event: null,
      data: 'first\nsecond\n third',
      raw: 'data: first\ndata:second\ndata:  third\n\n',
    });
  });

  it('takes the event field, ignores comments, id, retry and unknown fields', () => {
    const ev = parseSseBlock(
      ': keep-alive\nid: 7\nretry: 1000\nfoo: bar\nevent: message_stop\ndata: {"type":"message_stop"}\n\n',
    );
    assert.deepEqual(ev && { event: ev.event, data: ev.data }, {
      event: 'message_stop',
      data: '{"type":"message_stop"}',
    });
  });

  it('reads a line without a colon as a field with an empty value', () => {
    assert.deepEqual(parseSseBlock('data\ndata\n\n')?.data, '\n');
    assert.equal(parseSseBlock('event\ndata: x\n\n')?.event, null);
  });

  it('dispatches nothing for a block without data', () => {
    assert.equal(parseSseBlock(': OPENROUTER PROCESSING\n\n'), null);
    assert.equal(parseSseBlock('event: ping\n\n'), null);
    assert.equal(parseSseBlock('\n'), null);
  });

  it('matches field names exactly', () => {
    assert.equal(parseSseBlock('Data: x\n\n'), null);
    assert.equal(parseSseBlock('datum: x\ndata_: y\nevents: z\n\n'), null);
    assert.equal(parseSseBlock('eventful: z\ndata: y\n\n')?.event, null);
  });

  it('reads a long block of CR-ended lines', () => {
    const lines = 5000;
    assert.equal(parseSseBlock('data: x\r'.repeat(lines) + '\r')?.data.length, lines * 2 - 1);
  });
});

describe('createSseParser', () => {
  it('accepts LF, CRLF and CR line ends, mixed in one stream', () => {
    const events = parseAll(['data: a\n\ndata: b\r\n\r\nevent: e\rdata: c\r\rdata: d\r\n\n']);
    assert.deepEqual(fields(events), [
      { event: null, data: 'a' },
      { event: null, data: 'b' },
      { event: 'e', data: 'c' },
      { event: null, data: 'd' },
    ]);
    assert.deepEqual(
      events.map((e) => e.raw),
      ['data: a\n\n', 'data: b\r\n\r\n', 'event: e\rdata: c\r\r', 'data: d\r\n\n'],
    );
  });

  it('does not dispatch an event whose blank line never came, as the spec says', () => {
    assert.deepEqual(fields(parseAll(['data: a\n\ndata: b\n'])), [{ event: null, data: 'a' }]);
    assert.deepEqual(fields(parseAll(['data: a\n\ndata: b'])), [{ event: null, data: 'a' }]);
  });

  it('ends an event on a final CR at the end of the stream', () => {
    assert.deepEqual(fields(parseAll(['data: a\r\r'])), [{ event: null, data: 'a' }]);
  });

  it('does not read an LF after a CR as a second, blank line', () => {
    // "data: a" CRLF then "data: b" CRLF CRLF: one event with two data lines, not two events.
    for (const { label, chunks } of cuts(bytes('data: a\r\ndata: b\r\n\r\n'))) {
      assert.deepEqual(fields(parseAll(chunks)), [{ event: null, data: 'a\nb' }], label);
    }
  });

  it('strips a byte order mark at the start of the stream only', () => {
    const events = parseAll([bytes('\uFEFFdata: a\n\n\uFEFFdata: b\n\ndata: c\n\n')]);
    assert.deepEqual(fields(events), [
      { event: null, data: 'a' },
      { event: null, data: 'c' },
    ]);
    assert.equal(events[0]!.raw, '\uFEFFdata: a\n\n');
  });

  it('yields events as soon as their blank line arrives', () => {
    const parser = createSseParser();
    assert.deepEqual(parser.push('data: one\n'), []);
    assert.deepEqual(fields(parser.push('\ndata: tw')), [{ event: null, data: 'one' }]);
    assert.deepEqual(fields(parser.push('o\n\n')), [{ event: null, data: 'two' }]);
    assert.deepEqual(parser.end(), []);
  });

  for (const eol of ['\n', '\r\n', '\r'] as const) {
    it(`yields the same events for every split of a stream with multi-byte text (${JSON.stringify(eol)})`, () => {
      const stream = chatStream({ includeUsage: true, choices: TEXT_CHOICES, eol }) + messagesStream({ eol });
      const data = bytes(stream);
      assert.ok(data.length > 300 && data.length > stream.length, 'a few hundred bytes, some of them multi-byte');
      const whole = parseAll([stream]);
      assert.equal(whole.length, 20);
      assert.equal(JSON.parse(whole[2]!.data).choices[0].delta.content, 'aus 東京 ');
      assert.equal(whole.map((e) => e.raw).join(''), stream);
      for (const { label, chunks } of cuts(data)) assert.deepEqual(parseAll(chunks), whole, label);
    });
  }

  it('gives back the exact text of the stream as the raw of its events', () => {
    const stream = messagesStream({ eol: '\r\n' });
    assert.equal(
      parseAll([stream])
        .map((e) => e.raw)
        .join(''),
      stream,
    );
  });

  it('keeps a surrogate pair cut between two text chunks', () => {
    const stream = 'data: 🌸🌸\n\n';
    for (let i = 0; i <= stream.length; i++) {
      assert.deepEqual(
        fields(parseAll([stream.slice(0, i), stream.slice(i)])),
        [{ event: null, data: '🌸🌸' }],
        `cut at ${i}`,
      );
    }
  });
});

describe('createSseBlockReader', () => {
  it(
    'hands on every block with its exact bytes, comments and blank lines included, and returns the unfinished ' +
      'rest',
    () => {
      const stream = ': OPENROUTER PROCESSING\r\n\r\n\r\ndata: {"a":1}\r\n\r\ndata: [DO';
      for (const { label, chunks } of cuts(bytes(stream))) {
        const blocks: { bytes: string; event: string | null }[] = [];
        const reader = createSseBlockReader((b, _t, ev) => blocks.push({ bytes: text(b), event: ev?.data ?? null }));
        for (const chunk of chunks) reader.push(chunk);
        const rest = reader.end();
        assert.deepEqual(
          blocks,
          [
            { bytes: ': OPENROUTER PROCESSING\r\n\r\n', event: null },
            { bytes: '\r\n', event: null },
            { bytes: 'data: {"a":1}\r\n\r\n', event: '{"a":1}' },
          ],
          label,
        );
        assert.equal(rest && text(rest), 'data: [DO', label);
      }
    },
  );

  it('hands on a block that outgrows the limit while held in pieces without events, then reads on', () => {
    const big = `data: ${'x'.repeat(100)}\r\n\r\n`;
    const stream = `${big}data: next\r\n\r\n`;
    for (const { label, chunks } of cuts(bytes(stream))) {
      const blocks: { bytes: string; event: string | null }[] = [];
      const reader = createSseBlockReader((b, _t, ev) => blocks.push({ bytes: text(b), event: ev?.data ?? null }), 16);
      for (const chunk of chunks) reader.push(chunk);
      assert.equal(reader.end(), null, label);
      assert.deepEqual(blocks.pop(), { bytes: 'data: next\r\n\r\n', event: 'next' }, label);
      assert.equal(blocks.map((b) => b.bytes).join(''), big, label);
      // Only a block that had to be held (cut inside it, more than 16 bytes in) loses its event.
      const held = label === 'byte by byte' || (chunks[0]!.length > 16 && chunks[0]!.length < big.length);
      assert.deepEqual(
        blocks.map((b) => b.event),
        held ? blocks.map(() => null) : ['x'.repeat(100)],
        label,
      );
    }
  });

  it('copies held bytes, so a caller may reuse its chunk buffer after push', () => {
    const blocks: string[] = [];
    const reader = createSseBlockReader((b) => blocks.push(text(b)));
    const buffer = bytes('data: hel');
    reader.push(buffer);
    buffer.fill(0x78);
    reader.push(bytes('lo\n\n'));
    assert.deepEqual(blocks, ['data: hello\n\n']);
  });
});

/** The blocks of a whole stream, read character by character as the spec words it: the reference. */
function referenceBlocks(stream: string): { blocks: string[]; rest: string | null } {
  const blocks: string[] = [];
  let start = 0;
  let lineStart = 0;
  for (let i = 0; i < stream.length; ) {
    const c = stream[i];
    if (c !== '\r' && c !== '\n') {
      i++;
      continue;
    }
    const next = c === '\r' && stream[i + 1] === '\n' ? i + 2 : i + 1;
    if (i === lineStart) {
      blocks.push(stream.slice(start, next));
      start = next;
    }
    lineStart = next;
    i = next;
  }
  return { blocks, rest: start < stream.length ? stream.slice(start) : null };
}

function* strings(alphabet: string[], maxLength: number): Generator<string> {
  let level = [''];
  for (let length = 1; length <= maxLength; length++) {
    level = level.flatMap((s) => alphabet.map((c) => s + c));
    yield* level;
  }
}

describe('createSseSplitter', () => {
  it('splits every mix of CR, LF and CRLF as the spec reads it, however the bytes are cut', () => {
    for (const stream of strings(['a', '\r', '\n'], 7)) {
      const expected = referenceBlocks(stream);
      for (const { label, chunks } of cuts(bytes(stream))) {
        const blocks: string[] = [];
        const splitter = createSseSplitter((b, whole) => {
          assert.ok(whole);
          blocks.push(text(b));
        });
        for (const chunk of chunks) splitter.push(chunk);
        const rest = splitter.end();
        assert.deepEqual({ blocks, rest: rest && text(rest) }, expected, `${JSON.stringify(stream)} ${label}`);
      }
    }
  });

  it('marks the bytes that open the stream as first, and only those', () => {
    const firsts: boolean[] = [];
    const splitter = createSseSplitter((_b, _whole, first) => firsts.push(first));
    splitter.push(bytes('data: a\n\ndata: b\n'));
    splitter.push(bytes('\n'));
    assert.deepEqual(firsts, [true, false]);
  });
});
