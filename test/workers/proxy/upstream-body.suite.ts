import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GatewayOp } from '../../../protocol/gateway.ts';
import type { RelayRequest } from '../../../protocol/relay.ts';
import { injectStreamUsage } from '../../../workers/proxy/usage/stream-tap.ts';
import { upstreamBody } from '../../../workers/proxy/upstream-body.ts';
import { targetFor } from './helpers.ts';

// upstreamBody splices bytes instead of re-serialising; the parse-and-stringify function it replaced is the
// reference: for every body, parsing the spliced bytes and serialising them must give the reference's string.

function reference(req: RelayRequest, streamUsage: boolean): { body: string; stream: boolean; injected: boolean } {
  const json = JSON.parse(Buffer.from(req.body as ArrayBuffer).toString('utf8')) as Record<string, unknown>;
  if (req.upstreamModelId !== null && 'model' in json) json.model = req.upstreamModelId;
  const stream = json.stream === true;
  const injected = req.op === 'chat.completions' && stream && streamUsage && injectStreamUsage(json);
  return { body: JSON.stringify(json), stream, injected };
}

function request(
  text: string | Uint8Array,
  upstreamModelId: string | null,
  op: GatewayOp = 'chat.completions',
): RelayRequest {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const body = new ArrayBuffer(bytes.byteLength);
  new Uint8Array(body).set(bytes);
  return {
    op,
    target: targetFor('openai', 'http://127.0.0.1:1'),
    credentialRef: null,
    credentialId: null,
    requestId: 'req_test',
    clientModel: 'client-model',
    upstreamModelId,
    params: {},
    query: '',
    headers: {},
    body,
    bodyStreamed: false,
  };
}

const text = (body: string | Uint8Array) =>
  typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');

function assertMatchesReference(
  body: string,
  upstreamModelId: string | null,
  op: GatewayOp,
  streamUsage: boolean,
  spliced: boolean | null = true,
): void {
  const got = upstreamBody(request(body, upstreamModelId, op), streamUsage);
  const want = reference(request(body, upstreamModelId, op), streamUsage);
  const label = `${body} / ${String(upstreamModelId)} / ${op} / ${streamUsage}`;
  assert.equal(JSON.stringify(JSON.parse(text(got.body))), want.body, label);
  assert.equal(got.stream, want.stream, label);
  assert.equal(got.injected, want.injected, label);
  // The reference's road would pass every check above: only a byte array shows the scanner did the work.
  if (spliced !== null)
    assert.equal(got.body instanceof Uint8Array, spliced, `${label}: ${spliced ? 'spliced' : 're-serialised'}`);
}

const MESSAGES = '[{"role":"user","content":"hi"}]';

const BODIES: string[] = [
  '{}',
  ' {} ',
  `{"model":"a","messages":${MESSAGES}}`,
  `{"messages":${MESSAGES},"model":"a"}`,
  `{"messages":${MESSAGES}}`,
  `{"model":null,"messages":${MESSAGES}}`,
  `{"model":42,"stream":true}`,
  `{"model":{"id":"a","model":"inner"},"stream":true}`,
  `{"model":["a","b"],"stream":true}`,
  // Keys named like the ones looked for, one level down, and inside strings.
  `{"metadata":{"model":"inner","stream":false,"stream_options":{"include_usage":false}},"model":"a","stream":true}`,
  `{"messages":[{"role":"user","content":"{\\"model\\": \\"evil\\", \\"stream\\": true}"}],"model":"a"}`,
  `{"messages":[{"role":"user","content":"say \\"model\\":"}],"stream":false}`,
  `{"a":"\\"model\\":\\"x\\"","model":"a","stream":true}`,
  // Strings that end in backslashes, so the quote after them closes the string.
  `{"a":"ends in a backslash \\\\","model":"a","stream":true}`,
  `{"a":"\\\\\\\\","b":"\\\\\\"","model":"a","stream":true}`,
  `{"a":"\\\\\\\\\\"model\\":\\"x","model":"a","stream":true}`,
  `{"a":"\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00","model":"a","stream":true}`,
  // Brackets and braces inside strings, deep nesting, empty containers.
  `{"a":"}{][","b":[{"c":"]}"},[[[]]],{}],"model":"a","stream":true,"z":{"y":[1,{"x":"}"}]}}`,
  `{"a":[],"b":{},"model":"a","stream":true}`,
  // Whitespace everywhere JSON allows it.
  '\n\t{\r\n  "model" :\t"a" ,\n  "messages" : [ { "role" : "user" , "content" : "hi" } ] ,\r\n  "stream" : true ' +
    '\n}\n\t ',
  '{ "stream" : true , "stream_options" : { } , "model" : "a" }',
  '{"stream":true,"stream_options":{ "x" : 1 },"model":"a"}',
  // Numbers and literals of every shape, as values around the members.
  '{"n":-1.5e+10,"m":0,"t":true,"f":false,"z":null,"model":"a","stream":true,"max_tokens":32}',
  '{"model":"a","stream":true,"temperature":0.7}',
  // stream variants.
  '{"model":"a","stream":false}',
  '{"model":"a","stream":"true"}',
  '{"model":"a","stream":1}',
  '{"model":"a","stream":null}',
  '{"model":"a","stream":true}',
  // stream_options variants.
  '{"model":"a","stream":true,"stream_options":null}',
  '{"model":"a","stream":true,"stream_options":false}',
  '{"model":"a","stream":true,"stream_options":"x"}',
  '{"model":"a","stream":true,"stream_options":[]}',
  '{"model":"a","stream":true,"stream_options":{}}',
  '{"model":"a","stream":true,"stream_options":{"include_usage":false}}',
  '{"model":"a","stream":true,"stream_options":{"include_usage":true}}',
  '{"model":"a","stream":true,"stream_options":{"include_usage":null}}',
  '{"model":"a","stream":true,"stream_options":{"include_usage":"true"}}',
  '{"model":"a","stream":true,"stream_options":{"include_usage":{"include_usage":true}}}',
  '{"model":"a","stream":true,"stream_options":{"x":{"include_usage":true}}}',
  '{"model":"a","stream":true,"stream_options":{"x":1,"include_usage":false,"y":[2]}}',
  '{"stream_options":{"include_usage":false},"model":"a","stream":true}',
  '{"stream_options":null,"stream":true}',
  '{"model":"a","stream":false,"stream_options":null}',
  // Non-ASCII text and model names.
  '{"model":"modèle-🚀","messages":[{"role":"user","content":"héllo ✓ 日本語 🐕"}],"stream":true}',
  '{"ключ":"значение","model":"a","stream":true}',
  // Keys that repeat but are not looked for stay on the fast road.
  '{"x":1,"x":2,"model":"a","stream":true}',
];

// What the scanner leaves to the parse-and-stringify road: keys written with escapes, repeated keys it
// looks for, a top level that is not an object.
const REPARSED: string[] = [
  '{"mod\\u0065l":"a","stream":true}',
  '{"model":"a","\\u0073tream":true}',
  '{"model":"a","stream":true,"stream_options":{"include\\u005fusage":false}}',
  '{"caf\\u00e9":1,"model":"a","stream":true}',
  '{"model":"a","model":"b","stream":true}',
  '{"model":"a","stream":false,"stream":true}',
  '{"model":"a","stream":true,"stream":false}',
  '{"model":"a","stream":true,"stream_options":{"include_usage":true,"include_usage":false}}',
  '{"model":"a","stream":true,"stream_options":null,"stream_options":{}}',
  '[]',
  '[{"model":"a"}]',
];

const MODEL_IDS: (string | null)[] = [null, 'a', 'up/model-1', 'm"q\\é🚀\n'];
const OPS: GatewayOp[] = ['chat.completions', 'responses.create', 'embeddings'];

describe('upstreamBody matches the parse-and-stringify reference', () => {
  for (const body of BODIES) {
    it(body, () => {
      for (const id of MODEL_IDS)
        for (const op of OPS) for (const usage of [true, false]) assertMatchesReference(body, id, op, usage);
    });
  }

  for (const body of REPARSED) {
    it(`${body}, re-serialised`, () => {
      // Other operations may not need the member the scanner stops at; a streamed chat with usage needs them all.
      for (const id of MODEL_IDS)
        for (const op of OPS) for (const usage of [true, false]) assertMatchesReference(body, id, op, usage, null);
      assertMatchesReference(body, 'up/model-1', 'chat.completions', true, false);
    });
  }

  it('a 256 KB chat body with the model first', () => {
    const filler = 'The quick brown fox jumps over the "lazy" dog.\n '.repeat(5000);
    const body = JSON.stringify({
      model: 'bench-model',
      messages: [
        { role: 'system', content: 'You are a bench.' },
        { role: 'user', content: filler },
      ],
      max_tokens: 32,
      stream: true,
    });
    for (const id of MODEL_IDS) assertMatchesReference(body, id, 'chat.completions', true);
  });

  it('a body of many small messages, tools and unicode', () => {
    const messages = Array.from({ length: 500 }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `turn ${i} "model": é ✓ \\ ${'}'.repeat(i % 3)}`,
      model: `inner-${i}`,
    }));
    const body = JSON.stringify(
      {
        messages,
        tools: [
          {
            type: 'function',
            function: { name: 'f', parameters: { type: 'object', properties: { model: { type: 'string' } } } },
          },
        ],
        model: 'x',
        stream: true,
      },
      null,
      2,
    );
    for (const id of MODEL_IDS) assertMatchesReference(body, id, 'chat.completions', true);
  });
});

// Random bodies: members in any order, repeated, nested, with strings full of JSON's own punctuation and
// whitespace wherever JSON allows it. A fixed seed keeps a failure reproducible.
function randomBodies(count: number, seed: number): string[] {
  let state = seed;
  const rand = (n: number) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return (state >>> 8) % n;
  };
  const pick = <T>(list: readonly T[]): T => list[rand(list.length)]!;
  const KEYS = [
    'model',
    'stream',
    'stream_options',
    'include_usage',
    'messages',
    'content',
    'x',
    'say "hi"',
    'back\\slash',
  ];
  const PIECES = ['"', '\\', '\\"', '{', '}', '[', ']', ',', ':', '"model":', 'é', '🚀', '\n', ' ', 'model', 'true'];
  const space = () => pick(['', '', '', ' ', '\n', '\t ', '\r\n  ']);
  const str = () => JSON.stringify(Array.from({ length: rand(6) }, () => pick(PIECES)).join(''));
  const value = (depth: number): string => {
    switch (rand(depth > 2 ? 4 : 6)) {
      case 0:
        return str();
      case 1:
        return pick(['true', 'false', 'null', '0', '-1.5e3', '42']);
      case 2:
        return pick(['true', '{}', 'null', '{"include_usage":false}', '{"include_usage":true}', '"m"']);
      case 3:
        return str();
      case 4: {
        const items = Array.from({ length: rand(4) }, () => value(depth + 1));
        return `[${space()}${items.join(`${space()},${space()}`)}${space()}]`;
      }
      default:
        return object(depth + 1);
    }
  };
  // At the top, the members upstreamBody reads get the values that matter to it most of the time.
  const member = (key: string, depth: number): string => {
    if (depth > 0 || rand(4) === 0) return value(depth);
    if (key === 'stream') return pick(['true', 'true', 'false']);
    if (key === 'stream_options')
      return pick(['null', '{}', `{${space()}}`, '{"include_usage":false}', '{"include_usage":true}', object(1)]);
    return value(depth);
  };
  const object = (depth: number): string =>
    `{${space()}${Array.from({ length: rand(6) }, () => pick(KEYS))
      .map((key) => `${JSON.stringify(key)}${space()}:${space()}${member(key, depth)}`)
      .join(`${space()},${space()}`)}${space()}}`;
  return Array.from({ length: count }, () => `${space()}${object(0)}${space()}`);
}

describe('upstreamBody on random bodies', () => {
  it('matches the reference on 3,000 bodies and splices most of them', () => {
    let spliced = 0;
    for (const body of randomBodies(3000, 7)) {
      for (const id of [null, 'up/1']) {
        assertMatchesReference(body, id, 'chat.completions', true, null);
        if (upstreamBody(request(body, id), true).body instanceof Uint8Array) spliced++;
      }
    }
    assert.ok(spliced > 3000, `only ${spliced} of 6000 spliced`);
  });
});

describe('upstreamBody splices instead of re-serialising', () => {
  it('returns the very bytes it was given when nothing changes', () => {
    const req = request('{ "model" : "a",\n "stream": false }', 'a');
    const got = upstreamBody(req, true);
    assert.ok(got.body instanceof Uint8Array);
    assert.equal(got.body.buffer, req.body);
    assert.equal(got.body.byteOffset, 0);
    assert.equal(got.body.byteLength, (req.body as ArrayBuffer).byteLength);
  });

  it('takes a small body sent as text exactly as the same body sent as bytes', () => {
    for (const body of [
      '{"model":"a","stream":true,"messages":[{"role":"user","content":"h\u00e9 ✓"}]}',
      '{ "model" : "a" }',
      '{"input":"x"}',
    ]) {
      for (const id of ['up-1', 'a', null]) {
        const bytes = request(body, id);
        const text: RelayRequest = { ...bytes, body };
        const fromBytes = upstreamBody(bytes, true);
        const fromText = upstreamBody(text, true);
        assert.equal(Buffer.from(fromText.body).toString('utf8'), Buffer.from(fromBytes.body).toString('utf8'), body);
        assert.equal(fromText.stream, fromBytes.stream);
        assert.equal(fromText.injected, fromBytes.injected);
      }
    }
  });

  it('leaves a model the upstream already knows by that ID, and a body without one', () => {
    for (const [body, id] of [
      ['{"model":"up-1","stream":true}', 'up-1'],
      ['{"input":"x"}', 'up-1'],
      ['{"model":"a"}', null],
    ] as const) {
      const req = request(body, id, 'embeddings');
      const got = upstreamBody(req, true);
      assert.ok(got.body instanceof Uint8Array, body);
      assert.equal(got.body.buffer, req.body, body);
    }
  });

  it('keeps every other byte as the client wrote it', () => {
    const body =
      '{\n  "model" : "a",\n  "n": 1.0,\n  "big": 12345678901234567890,\n  "s": "\\u00e9",\n  "stream" : true\n}';
    const got = upstreamBody(request(body, 'up/1'), true);
    assert.equal(
      text(got.body),
      '{\n  "model" : "up/1",\n  "n": 1.0,\n  "big": 12345678901234567890,\n  "s": "\\u00e9",\n  "stream" : ' +
        'true\n,"stream_options":{"include_usage":true}}',
    );
    assert.deepEqual(got, { body: got.body, stream: true, injected: true });
  });

  it('sets include_usage in place, in an empty or a filled stream_options', () => {
    const cases: [string, string][] = [
      ['{"stream":true,"stream_options":null}', '{"stream":true,"stream_options":{"include_usage":true}}'],
      ['{"stream":true,"stream_options":{ }}', '{"stream":true,"stream_options":{ "include_usage":true}}'],
      ['{"stream":true,"stream_options":{"x":1 }}', '{"stream":true,"stream_options":{"x":1 ,"include_usage":true}}'],
      // `true` fits where `false` stood: written in place, the spare byte blanked.
      [
        '{"stream":true,"stream_options":{"include_usage" : false,"x":1}}',
        '{"stream":true,"stream_options":{"include_usage" : true ,"x":1}}',
      ],
    ];
    for (const [body, want] of cases) {
      const got = upstreamBody(request(body, null), true);
      assert.equal(text(got.body), want);
      assert.equal(got.injected, true);
    }
  });

  it("writes an upstream ID no longer than the client's model in place, in the same buffer", () => {
    const req = request('{"model":"provider/long-name","messages":[]}', 'short', 'chat.completions');
    const got = upstreamBody(req, true);
    assert.ok(got.body instanceof Uint8Array);
    assert.equal(got.body.buffer, req.body);
    const blanked = '"provider/long-name"'.length - '"short"'.length;
    assert.equal(text(got.body), `{"model":"short"${' '.repeat(blanked)},"messages":[]}`);
    assert.deepEqual(JSON.parse(text(got.body)), { model: 'short', messages: [] });
  });

  it('replaces the model with the ID JSON-encoded', () => {
    const got = upstreamBody(request('{"model":"a","x":"é"}', 'm"q\\é🚀\n', 'embeddings'), false);
    assert.equal(text(got.body), '{"model":"m\\"q\\\\é🚀\\n","x":"é"}');
    assert.equal((JSON.parse(text(got.body)) as { model: string }).model, 'm"q\\é🚀\n');
  });

  for (const body of ['{"mod\\u0065l":"a"}', '{"model":"a","model":"b"}', '[{"model":"a"}]']) {
    it(`re-serialises ${body}, which the scanner leaves alone`, () => {
      const got = upstreamBody(request(body, 'up'), true);
      assert.equal(typeof got.body, 'string');
      assert.equal(got.body, reference(request(body, 'up'), true).body);
    });
  }

  // The edge sends only bodies it parsed strictly; anything else goes to JSON.parse, which refuses it.
  for (const body of ['{"model":"a"} {"model":"b"}', '{"model":,"stream":true}', '{"model":"a"', '{"model":"a}']) {
    it(`throws on ${body} rather than splicing it`, () => {
      assert.throws(() => upstreamBody(request(body, 'up'), true), SyntaxError);
    });
  }

  // The edge accepts a leading BOM; the old function handed the worker's JSON.parse a U+FEFF and failed.
  it('drops a leading BOM rather than failing on it', () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"model":"a","stream":true}')]);
    const got = upstreamBody(request(bytes, 'up'), true);
    assert.equal(got.body, '{"model":"up","stream":true,"stream_options":{"include_usage":true}}');
    assert.equal(got.stream, true);
    assert.equal(got.injected, true);
  });
});
