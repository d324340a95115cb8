import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, it } from 'node:test';
import { prng } from '../helpers/prng.ts';
import { startService, untilClosed as closedAfter, type TestService } from '../helpers/service.ts';

// W2.6: the service survives a bounded, seeded fuzz of client bytes at the socket level: well-formed
// requests with bytes flipped, inserted, cut or repeated, odd methods, targets and header blocks, and plain
// noise. Whatever it answers is never a 5xx, and it keeps serving. Then what its edge's own parser does with
// requests uWS refuses unanswered (docs/api.md, HTTP at the edge), per the edge /health names.

const SEED = 0x5eed;
const CASES = 256;
/**
 * A connection that has not been answered by then is dropped by the client (the edge waits for more bytes).
 * node:http answers far more of the cases (its parser's 400s) and each costs it more, so it gets longer.
 */
let WAIT_MS = 120;

let svc: TestService;
/** Which edge serves, as /health says. */
let edge: string;

before(async () => {
  svc = await startService();
  edge = ((await svc.request('GET', '/health')).json as { edge: string }).edge;
  if (edge === 'node:http') WAIT_MS = 400;
});
after(async () => {
  await svc.stop();
});

function fuzzCases(token: string): Buffer[] {
  const random = prng(SEED);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const int = (n: number) => Math.floor(random() * n);
  const body = JSON.stringify({ model: 'nope/x', messages: [{ role: 'user', content: 'hi' }], name: 'fuzz' });
  const bases = [
    `GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
    `GET /v1/settings?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`,
    `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: ` +
      `application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    `PATCH /v1/settings HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: ` +
      `application/json\r\nContent-Length: 2\r\n\r\n{}`,
    `POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: ${token}\r\nTransfer-Encoding: ` +
      `chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    `POST /v1/images/edits HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: ` +
      `multipart/form-data; boundary=b\r\nContent-Length: 60\r\n\r\n--b\r\nContent-Disposition: form-data; ` +
      `name="model"\r\n\r\nx\r\n--b--\r\n`,
  ];
  const noise = [
    '\0',
    '\r',
    '\n',
    ' ',
    ':',
    '%',
    '%00',
    '\u00ff',
    '\t',
    '"',
    '{',
    '}',
    '\\',
    '..',
    '/',
    '?',
    '#',
    'é',
    '\u2028',
    'HTTP/1.1',
  ];
  const mutate = (text: string): string => {
    const at = int(text.length + 1);
    switch (int(9)) {
      case 0: // flip a byte
        return text.slice(0, at) + String.fromCharCode(int(256)) + text.slice(at + 1);
      case 1: // insert noise
        return text.slice(0, at) + pick(noise).repeat(1 + int(4)) + text.slice(at);
      case 2: // cut short
        return text.slice(0, at);
      case 3: // repeat a stretch
        return text.slice(0, at) + text.slice(at, at + int(40)).repeat(2 + int(50)) + text.slice(at);
      case 4: // an odd method or target
        return text.replace(
          /^\S+ \S+/,
          `${pick([
            'GET',
            'POST',
            'PUT',
            'DELETE',
            'PATCH',
            'OPTIONS',
            'HEAD',
            'TRACE',
            'CONNECT',
            'BREW',
            'get',
            '',
          ])} ${pick([
            '/',
            '*',
            '//v1//settings',
            '/v1/%ZZ',
            '/v1/gauge/x?limit=-1',
            '/v1/responses/' + 'r'.repeat(int(6000)),
            '/v1/catalog/models/' + '%2F'.repeat(int(400)),
            '/..%2f..%2fetc/passwd',
            'http://127.0.0.1/health',
          ])}`,
        );
      case 5: // an odd header
        return text.replace(
          '\r\n',
          `\r\n${pick([
            'X-A',
            'Content-Length',
            'Transfer-Encoding',
            'Host',
            'Authorization',
            'Content-Type',
            'Expect',
            'Connection',
            'Upgrade',
          ])}: ${pick([
            '',
            '-1',
            '99999999999999999999',
            'chunked',
            '100-continue',
            'close',
            'websocket',
            'Basic Zm9vOmJhcg==',
            '\u00ff\u00fe',
            'a'.repeat(int(9000)),
          ])}\r\n`,
        );
      case 6: // many headers
        return text.replace(
          '\r\n',
          '\r\n' + Array.from({ length: 40 + int(30) }, (_, i) => `X-${i}: ${i}\r\n`).join(''),
        );
      case 7: // two requests in one write
        return text + pick(bases);
      default: // noise only
        return Array.from({ length: 1 + int(300) }, () => String.fromCharCode(int(256))).join('');
    }
  };
  const cases: Buffer[] = [];
  for (let i = 0; i < CASES; i++) {
    let text = pick(bases);
    for (let m = 1 + int(3); m > 0; m--) text = mutate(text);
    cases.push(Buffer.from(text, 'latin1'));
  }
  return cases;
}

/** Sends one case; resolves with every status line the service wrote back before closing or the wait ends. */
function send(bytes: Buffer): Promise<number[]> {
  return new Promise((resolve) => {
    const socket = connect(svc.port, '127.0.0.1');
    let text = '';
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve([...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1])));
    };
    const timer = setTimeout(done, WAIT_MS);
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('close', done);
    socket.on('error', done);
    socket.write(bytes);
  });
}

it(`survives ${CASES} fuzzed requests at the socket level, answering none with a 5xx`, async () => {
  const cases = fuzzCases(svc.adminToken);
  const seen = new Map<number, number>();
  const fivexx: string[] = [];
  // Sixteen at a time: enough to overlap, bounded so that the suite's other files keep their cores.
  for (let i = 0; i < cases.length; i += 16) {
    const batch = cases.slice(i, i + 16);
    const answers = await Promise.all(batch.map(send));
    answers.forEach((statuses, j) => {
      for (const status of statuses) {
        seen.set(status, (seen.get(status) ?? 0) + 1);
        if (status >= 500) fivexx.push(`${status} for ${JSON.stringify(batch[j]!.toString('latin1').slice(0, 200))}`);
      }
    });
  }
  assert.deepEqual(fivexx, []);
  // The fuzz reached the routes, not only the parser.
  assert.ok((seen.get(401) ?? 0) + (seen.get(400) ?? 0) + (seen.get(404) ?? 0) > 20, JSON.stringify([...seen]));
  assert.equal(svc.process.exitCode, null);
  const health = await svc.request('GET', '/health');
  assert.equal(health.status, 200);
  assert.equal((await svc.request('GET', '/v1/settings')).status, 200);
});

const untilClosed = (bytes: string) => closedAfter(svc.port, bytes);

it('requests outside what uWebSockets.js parses are answered by node:http, or closed unanswered by uWS', async () => {
  const noHost = await untilClosed('GET /health HTTP/1.1\r\n\r\n');
  if (edge === 'uWebSockets.js') {
    assert.equal(noHost, '');
    return;
  }
  assert.equal(edge, 'node:http');
  // Node's parser refuses these; the refusal still carries the error envelope and our request ID.
  for (const refused of [noHost, await untilClosed('\u0001\u0002 noise\r\n\r\n')]) {
    assert.match(refused, /^HTTP\/1\.1 400 /);
    assert.match(refused, /\r\nx-request-id: req_\w+\r\n/);
    assert.match(refused, /"code":"INVALID_REQUEST"/);
  }
  // HTTP/1.0 is served (and closed after the answer); an absolute-form target names no route here.
  const old = await untilClosed('GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n');
  assert.match(old, /^HTTP\/1\.1 200 /);
  assert.match(old, /"status":"ok"/);
  const absolute = await untilClosed(
    'GET http://127.0.0.1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
  );
  assert.match(absolute, /^HTTP\/1\.1 404 /);
  assert.match(absolute, /"code":"NOT_FOUND"/);
});

// W4.6 item 4: the uWS build that was the default on Debian 12 (20.30) never answered these; the default edge
// of every platform must (a header name with `_` is Codex CLI's `session_id`).
it('the default edge answers valid requests whatever their header names, count or version', async () => {
  const auth = `Authorization: Bearer ${svc.adminToken}\r\n`;
  const underscore = await untilClosed(
    `GET /v1/settings HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}session_id: abc\r\nconversation_id: d\r\n` +
      'Connection: close\r\n\r\n',
  );
  assert.match(underscore, /^HTTP\/1\.1 200 /);
  const many = Array.from({ length: 60 }, (_, i) => `x-field-${i}: ${i}\r\n`).join('');
  const sixty = await untilClosed(`GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n${many}Connection: close\r\n\r\n`);
  assert.match(sixty, /^HTTP\/1\.1 200 /);
  const old = await untilClosed('GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n');
  assert.match(old, /^HTTP\/1\.1 200 /);
  const conflicting = await untilClosed(
    `POST /v1/tokens HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\n` +
      'Content-Length: 2\r\nContent-Length: 3\r\n\r\n{} ',
  );
  assert.match(conflicting, /^HTTP\/1\.1 400 /);
  assert.match(conflicting, /"code":"INVALID_REQUEST"/);
  assert.equal((await svc.request('GET', '/v1/tokens')).json.data.length, 1);
});
