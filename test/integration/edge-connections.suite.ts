import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { chooseEdge } from '../../edge/http/choose-edge.ts';
import { untilClosed } from '../helpers/service.ts';
import { inProcessDefaults, startInProcess, type InProcessService } from '../helpers/in-process.ts';

// W2.6 against the running service: a pipelined request never leaves a write committed and unanswered, an
// answer sent before an upload was read reaches the official client, and the carrier and Host rules hold.

let svc: InProcessService;

before(async () => {
  svc = await startInProcess();
});
after(async () => {
  await svc.stop();
});

const exchange = (bytes: string) => untilClosed(svc.port, bytes);

describe('the edge', () => {
  it(
    'is the one SWITCHYARD_EDGE asks for, and /health names it (edge-connections-other.test.ts runs this file on ' +
      'the edge `auto` does not choose)',
    async () => {
      const { edge } = (await svc.request('GET', '/health')).json as { edge: string };
      if (process.env.SWITCHYARD_EDGE === 'node') assert.equal(edge, 'node:http');
      else if (process.env.SWITCHYARD_EDGE === 'uws') assert.equal(edge, 'uWebSockets.js');
      else assert.equal(edge, chooseEdge('auto').edge);
    },
  );
});

describe('pipelining', () => {
  it('a token creation followed in the same packet by GET /health creates no token nobody received', async () => {
    const names: string[] = [];
    const received: string[] = [];
    for (let i = 0; i < 10; i++) {
      const body = JSON.stringify({ name: `pipelined-${i}` });
      names.push(`pipelined-${i}`);
      const text = await exchange(
        `POST /v1/tokens HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${svc.adminToken}\r\nContent-Type: ` +
          `application/json\r\n` +
          `Content-Length: ${body.length}\r\n\r\n${body}GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: ` +
          `close\r\n\r\n`,
      );
      // Either both are answered in order (then the secret reached the client) or neither acted.
      if (text.includes('"secret"')) {
        svc.markSecretBearing({ status: 201, headers: {}, text, json: undefined });
        assert.ok(text.indexOf('"secret"') < text.indexOf('"status":"ok"'), text);
        received.push(`pipelined-${i}`);
      } else assert.equal(text, '');
    }
    const list = await svc.request('GET', '/v1/tokens');
    const created = (list.json.data as { name: string }[]).filter((t) => names.includes(t.name)).map((t) => t.name);
    assert.deepEqual(created.sort(), received.sort());
  });

  it(
    'a settings change followed in the same packet by another request changes nothing (uWS), or is answered before ' +
      'it (node:http)',
    async () => {
      const { edge } = (await svc.request('GET', '/health')).json as { edge: string };
      const before_ = await svc.request('GET', '/v1/settings');
      const body = JSON.stringify({ usage: { retentionDays: 123 } });
      const text = await exchange(
        `PATCH /v1/settings HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${svc.adminToken}\r\nContent-Type: ` +
          `application/json\r\n` +
          `Content-Length: ${body.length}\r\n\r\n${body}GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: ` +
          `close\r\n\r\n`,
      );
      const after_ = await svc.request('GET', '/v1/settings');
      if (edge === 'uWebSockets.js') {
        assert.equal(text, '');
        assert.equal(after_.json.usage.retentionDays, before_.json.usage.retentionDays);
        return;
      }
      assert.deepEqual(
        [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]),
        ['200', '200'],
      );
      assert.ok(text.indexOf('"retentionDays":123') < text.indexOf('"status":"ok"'), text);
      assert.equal(after_.json.usage.retentionDays, 123);
    },
  );

  it('reads pipelined in one packet are all answered, in order', async () => {
    const earlier = new Set(svc.logLines().map((l) => l.reqId));
    const text = await exchange(
      `GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /v1/settings HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ` +
        `Bearer ${svc.adminToken}\r\nConnection: close\r\n\r\n`,
    );
    if (text === '' && inProcessDefaults.edgeThreads > 1) {
      // An edge thread beside the main one forwards /health to the main thread and answers after a round trip:
      // a request pipelined behind it ends the connection on uWS, as behind a gateway call (docs/api.md, Edge
      // threads). That thread, not the main one, took the connection.
      const line = await svc.waitForLog((l) => l.route === 'GET /health' && !earlier.has(l.reqId));
      assert.ok(Number(line.edgeThread) >= 1, JSON.stringify(line));
      return;
    }
    assert.deepEqual(
      [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]),
      ['200', '200'],
    );
    assert.ok(text.indexOf('"status":"ok"') < text.indexOf('"retentionDays"'), text);
  });
});

describe('framing', () => {
  it('a token creation smuggled behind conflicting Content-Length values is never run', async () => {
    const body = JSON.stringify({ name: 'smuggled' });
    const smuggled =
      `POST /v1/tokens HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${svc.adminToken}\r\nContent-Type: ` +
      `application/json\r\n` +
      `Content-Length: ${body.length}\r\n\r\n${body}`;
    const text = await exchange(
      `POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: ` +
        `${2 + smuggled.length}\r\n\r\n{}${smuggled}`,
    );
    // uWS closes unanswered, node:http answers 400; the bytes after the first length are never a request.
    assert.doesNotMatch(text, /"secret"|HTTP\/1\.1 201/);
    const list = await svc.request('GET', '/v1/tokens');
    assert.deepEqual(
      (list.json.data as { name: string }[]).filter((t) => t.name === 'smuggled'),
      [],
    );
  });
});

describe('early answers to uploads', () => {
  it('images.edit with a preset and a 1 MiB image gets the 400 envelope, every time', async () => {
    const client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
    const image = Buffer.alloc(1024 * 1024, 0x42);
    for (let i = 0; i < 4; i++) {
      // model before image: the service refuses the preset before the image has been read.
      const err = await client.images
        .edit({ model: '@preset/anything', prompt: 'p', image: await toFile(image, 'a.png', { type: 'image/png' }) })
        .then(
          () => null,
          (e: unknown) => e,
        );
      assert.ok(err instanceof OpenAI.APIError, `attempt ${i}: ${String(err)}`);
      assert.equal(err.status, 400);
      assert.equal((err.error as { code?: string } | undefined)?.code, 'INVALID_REQUEST');
    }
  });

  it('smaller uploads refused early lose no answer either', async () => {
    const client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
    for (let i = 0; i < 20; i++) {
      const image = Buffer.alloc(64 * 1024 + i * 997, 0x42);
      const err = await client.images
        .edit({ model: '@preset/anything', prompt: 'p', image: await toFile(image, 'a.png', { type: 'image/png' }) })
        .then(
          () => null,
          (e: unknown) => e,
        );
      assert.ok(err instanceof OpenAI.APIError && err.status === 400, `attempt ${i}: ${String(err)}`);
    }
  });
});

describe('carriers and Host', () => {
  it('the 401 hint shows how to send the token, not "[redacted]" (W2.7)', async () => {
    const reply = await svc.request('GET', '/v1/settings', { token: null });
    assert.equal(reply.status, 401);
    assert.match(reply.json.error.message, /send it as `Authorization: Bearer <token>`/);
  });

  it(
    'Authorization: Basic beside a valid x-api-key is refused: the first carrier present is the one ' + 'used',
    async () => {
      const reply = await svc.request('GET', '/v1/settings', {
        token: null,
        headers: { authorization: 'Basic dXNlcjpwYXNz', 'x-api-key': svc.adminToken },
      });
      assert.equal(reply.status, 401);
      assert.equal(reply.json.error.code, 'UNAUTHORIZED');
      const ok = await svc.request('GET', '/v1/settings', { token: null, headers: { 'x-api-key': svc.adminToken } });
      assert.equal(ok.status, 200);
    },
  );

  it('a Host whose "port" runs on into another name is refused as DNS rebinding', async () => {
    for (const host of [`127.0.0.1:${svc.port}.evil.example`, `localhost:${svc.port}.evil.example`]) {
      const reply = await svc.request('GET', '/v1/settings', { headers: { host } });
      assert.equal(reply.status, 403, host);
      assert.equal(reply.json.error.code, 'FORBIDDEN');
    }
    assert.equal(
      (await svc.request('GET', '/v1/settings', { headers: { host: `127.0.0.1:${svc.port}` } })).status,
      200,
    );
  });
});
