import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tempHome } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// A credential shaped like nothing the redactor knows, so only the service's own discipline keeps it out.
const SECRET = `zz-provider-credential-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;

let svc: InProcessService;
let home: string;
before(async () => {
  home = tempHome();
  svc = await startInProcess({ home });
});
after(async () => {
  await svc.stop();
});

function allFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? allFiles(p) : [p];
  });
}

const closedPort = 'http://127.0.0.1:9/v1';

describe('provider records', () => {
  test('create applies defaults and never shows the credential', async () => {
    const reply = await svc.request('POST', '/v1/providers', {
      body: {
        kind: 'openai',
        credential: SECRET,
        hints: { 'openai-project': 'proj_1' },
        baseUrl: closedPort,
        autoProxyModels: false,
      },
    });
    assert.equal(reply.status, 201, reply.text);
    const p = reply.json;
    assert.equal(p.id, 'openai');
    assert.equal(p.displayName, 'openai');
    assert.equal(p.baseUrl, closedPort);
    assert.equal(p.credentialConfigured, true);
    assert.deepEqual(p.hints, { 'OpenAI-Project': 'proj_1' });
    assert.deepEqual(p.timeouts, { connectMs: 10000, headMs: 600000, idleMs: 300000 });
    assert.deepEqual(Object.keys(p).sort(), [
      'autoProxyModels',
      'baseUrl',
      'createdAt',
      'credentialConfigured',
      'credentials',
      'displayName',
      'enabled',
      'hints',
      'id',
      'kind',
      'timeouts',
      'updatedAt',
    ]);
    assert.ok(!reply.text.includes(SECRET));
    assert.ok(!/cred_/.test(reply.text), 'no credential reference');
  });

  test('hosted kinds default their baseUrl; local kinds that need one say so', async () => {
    const anthropic = await svc.request('POST', '/v1/providers', { body: { kind: 'anthropic', enabled: false } });
    assert.equal(anthropic.json.baseUrl, 'https://api.anthropic.com');
    assert.equal(anthropic.json.credentialConfigured, false);
    const compat = await svc.request('POST', '/v1/providers', { body: { kind: 'openai_compatible' } });
    assert.equal(compat.status, 400);
    assert.equal(compat.json.error.param, 'baseUrl');
    assert.match(compat.json.error.message, /^An openai_compatible provider needs a baseUrl\./);
    const embedded = await svc.request('POST', '/v1/providers', {
      body: { kind: 'embedded', baseUrl: 'http://x.example' },
    });
    assert.equal(embedded.json.error.param, 'baseUrl');
  });

  test('validation: every 400 names its param; unknown fields are INVALID_JSON', async () => {
    const cases: [unknown, string, string][] = [
      [{ kind: 'nope' }, 'INVALID_REQUEST', 'kind'],
      [{ kind: 'openai', id: 'Bad_ID' }, 'INVALID_REQUEST', 'id'],
      [{ kind: 'openai', id: 'x2', hints: { 'X-Api-Key': 'k' } }, 'INVALID_REQUEST', 'hints.X-Api-Key'],
      [{ kind: 'anthropic', id: 'x3', hints: { 'OpenAI-Project': 'p' } }, 'INVALID_REQUEST', 'hints.OpenAI-Project'],
      [{ kind: 'openai', id: 'x4', baseUrl: 'ftp://x.example' }, 'INVALID_REQUEST', 'baseUrl'],
      [{ kind: 'openai', id: 'x5', baseUrl: 'https://user:pw@x.example/v1' }, 'INVALID_REQUEST', 'baseUrl'],
      [{ kind: 'openai', id: 'x6', baseUrl: 'not a url' }, 'INVALID_REQUEST', 'baseUrl'],
      [{ kind: 'openai', id: 'x7', timeouts: { connectMs: 1 } }, 'INVALID_REQUEST', 'timeouts.connectMs'],
      [{ kind: 'openai', id: 'x8', credential: 'has space' }, 'INVALID_REQUEST', 'credential'],
      [{ kind: 'embedded', id: 'x9', credential: 'k' }, 'INVALID_REQUEST', 'credential'],
      [{ kind: 'openai', id: 'x10', credentialRef: 'cred_x' }, 'INVALID_JSON', 'credentialRef'],
    ];
    for (const [body, code, param] of cases) {
      const reply = await svc.request('POST', '/v1/providers', { body });
      assert.equal(reply.status, 400, JSON.stringify(body));
      assert.equal(reply.json.error.code, code, JSON.stringify(body));
      assert.equal(reply.json.error.param, param, JSON.stringify(body));
    }
    const dup = await svc.request('POST', '/v1/providers', { body: { kind: 'openai', baseUrl: closedPort } });
    assert.equal(dup.status, 409);
    assert.equal(dup.json.error.code, 'CONFLICT');
    const kindChange = await svc.request('PATCH', '/v1/providers/openai', { body: { kind: 'anthropic' } });
    assert.equal(kindChange.json.error.code, 'INVALID_JSON');
    assert.equal((await svc.request('GET', '/v1/providers/none')).status, 404);
    assert.equal((await svc.request('PATCH', '/v1/providers/none', { body: {} })).status, 404);
    assert.equal((await svc.request('DELETE', '/v1/providers/none')).status, 404);
  });

  test('PATCH replaces and clears the credential, merges timeouts, replaces hints', async () => {
    const replaced = await svc.request('PATCH', '/v1/providers/openai', {
      body: { credential: `${SECRET}-2`, timeouts: { headMs: 5000 }, hints: { 'OpenAI-Organization': 'org_1' } },
    });
    assert.equal(replaced.status, 200, replaced.text);
    assert.equal(replaced.json.credentialConfigured, true);
    assert.deepEqual(replaced.json.timeouts, { connectMs: 10000, headMs: 5000, idleMs: 300000 });
    assert.deepEqual(replaced.json.hints, { 'OpenAI-Organization': 'org_1' });
    const cleared = await svc.request('PATCH', '/v1/providers/anthropic', {
      body: { credential: 'sk-ant-temporary-value-123' },
    });
    assert.equal(cleared.json.credentialConfigured, true);
    const gone = await svc.request('PATCH', '/v1/providers/anthropic', { body: { credential: null } });
    assert.equal(gone.json.credentialConfigured, false);
  });

  test('test action reports an unreachable provider without failing the request', async () => {
    const reply = await svc.request('POST', '/v1/providers/openai/actions/test');
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.json.ok, false);
    assert.equal(reply.json.error.code, 'UPSTREAM_UNREACHABLE');
    const refresh = await svc.request('POST', '/v1/providers/openai/actions/refresh-models');
    assert.equal(refresh.status, 502);
    assert.equal(refresh.json.error.code, 'UPSTREAM_UNREACHABLE');
    const listing = await svc.request('GET', '/v1/providers/openai/models');
    assert.equal(listing.json.lastError.code, 'UPSTREAM_UNREACHABLE');
    assert.equal((await svc.request('POST', '/v1/providers/openai/actions/explode')).status, 404);
  });

  test('the credential is nowhere in clear: not in responses, the log, or any file of the data directory', async () => {
    for (const secret of [SECRET, `${SECRET}-2`]) {
      assert.ok(!svc.responsesText().includes(secret));
      assert.ok(!svc.log().includes(secret));
      for (const file of allFiles(home)) assert.ok(!readFileSync(file).includes(secret), `${file} holds the secret`);
    }
    const audit = await svc.request('GET', '/v1/audit-events?resourceType=provider');
    assert.ok(audit.json.data.length >= 4);
    assert.ok(!/cred_|zz-provider/.test(audit.text));
  });

  test('delete removes the record, and the credential survives a restart until then', async () => {
    await svc.stop();
    svc = await startInProcess({ home });
    const p = await svc.request('GET', '/v1/providers/openai');
    assert.equal(p.json.credentialConfigured, true);
    const del = await svc.request('DELETE', '/v1/providers/anthropic');
    assert.deepEqual(del.json, { id: 'anthropic', deleted: true });
    assert.equal((await svc.request('GET', '/v1/providers/anthropic')).status, 404);
    const list = await svc.request('GET', '/v1/providers');
    assert.deepEqual(
      list.json.data.map((x: { id: string }) => x.id),
      ['openai'],
    );
  });
});
