import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ProviderService } from '../../control/provider-service.ts';
import { DEFAULT_TIMEOUTS } from '../../protocol/providers.ts';
import { openStoreEnv } from '../../store/env.ts';
import { openVault } from '../../store/vault/index.ts';
import { openLiveStream } from '../fakes/sse-client.ts';
import * as openaiFake from '../fakes/openai.ts';
import { addProvider } from '../helpers/gateway.ts';
import { inProcessDefaults, startInProcess, type InProcessService } from '../helpers/in-process.ts';
import type { Reply } from '../helpers/service.ts';
import { tempHome } from '../helpers/service.ts';

// A provider's credentials over HTTP (docs/api.md, Provider credentials), in the channel family: each route
// reaches the providers port over a MessagePort, and where uWebSockets.js loads a second edge thread serves
// calls. Keys go in and never come out (responses, log, audit, data directory); a key the upstream refused is
// set aside on every thread at once; a provider stored with one key before credentials existed keeps working.

// Shaped like nothing the redactor knows, so only the service's own discipline keeps them out.
const KEY = `zz-cred-key-${process.pid}-${Date.now().toString(36)}`;
const KEYS = [`${KEY}-a`, `${KEY}-b`, `${KEY}-c`];
let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let providers: ProviderService | undefined;

before(async () => {
  oa = await openaiFake.start({ apiKey: KEYS[0] });
  oa.setModels([{ id: 'gpt-keys' }]);
  svc = await startInProcess({
    // The control service itself, for what only an edge thread calls (a refused key).
    beforeFamily: (name, parts) => {
      if (name === 'runtime') providers = parts.providers;
    },
  });
  assert.equal(await addProvider(svc, { id: 'oa', kind: 'openai', baseUrl: oa.baseUrl, credential: KEYS[0]! }), 1);
});
after(async () => {
  await svc?.stop();
  await oa?.close();
});

const ok = async (method: string, path: string, body?: unknown, status = 200) => {
  const reply = await svc.request(method, path, body === undefined ? {} : { body });
  assert.equal(reply.status, status, `${method} ${path}: ${reply.text}`);
  return reply.json;
};
const refused = async (method: string, path: string, body: unknown, status: number, code: string, param: string) => {
  const reply = await svc.request(method, path, body === undefined ? {} : { body });
  assert.equal(reply.status, status, `${method} ${path} ${JSON.stringify(body)}: ${reply.text}`);
  assert.equal(reply.json.error.code, code, JSON.stringify(body));
  assert.equal(reply.json.error.param, param, JSON.stringify(body));
};
const chat = () => ({ model: 'oa/gpt-keys', messages: [{ role: 'user', content: 'hi' }] });

function allFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? allFiles(p) : [p];
  });
}

describe('provider credentials', () => {
  test('a provider made with a key holds it as `default`; more are added, listed in order, never shown', async () => {
    const provider = await ok('GET', '/v1/providers/oa');
    assert.equal(provider.credentials, 1);
    assert.equal(provider.credentialConfigured, true);
    const added = await ok(
      'POST',
      '/v1/providers/oa/credentials',
      { label: 'spare', credential: KEYS[1], weight: 3 },
      201,
    );
    assert.match(added.id, /^key_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.deepEqual(
      { ...added, id: 'x', createdAt: 'x', updatedAt: 'x' },
      {
        id: 'x',
        label: 'spare',
        weight: 3,
        enabled: true,
        rejected: false,
        rejectedAt: null,
        createdAt: 'x',
        updatedAt: 'x',
        headroom: null,
        coolingUntil: null,
        sessions: 0,
      },
    );
    await ok('POST', '/v1/providers/oa/credentials', { label: 'off', credential: KEYS[2], enabled: false }, 201);
    const list = (await ok('GET', '/v1/providers/oa/credentials')).data;
    assert.deepEqual(
      list.map((c: { label: string; enabled: boolean }) => [c.label, c.enabled]),
      [
        ['default', true],
        ['spare', true],
        ['off', false],
      ],
    );
    assert.equal((await ok('GET', '/v1/providers/oa')).credentials, 3);
    // With no headroom known yet, the spare's weight puts it first. The fake refuses it: it is set aside and the
    // call moves to the default key, which the fake accepts. The list shows the refusal at once, from the pool's
    // table, before the thread's report of it is stored and announced. An edit of the spare brings it back.
    const events = await openLiveStream({
      port: svc.port,
      path: '/v1/events?types=credential.rejected',
      headers: { authorization: `Bearer ${svc.adminToken}` },
    });
    assert.equal((await svc.request('POST', '/v1/chat/completions', { body: chat() })).status, 200);
    const after = (await ok('GET', '/v1/providers/oa/credentials')).data;
    assert.deepEqual(
      after.map((c: { label: string; rejected: boolean }) => [c.label, c.rejected]),
      [
        ['default', false],
        ['spare', true],
        ['off', false],
      ],
    );
    assert.equal((await events.next())?.data.credentialId, added.id, 'the refusal is stored and announced');
    events.close();
    assert.equal((await ok('PATCH', `/v1/providers/oa/credentials/${added.id}`, {})).rejected, false);
  });

  test('bad input: every 4xx names its param; unknown fields are INVALID_JSON', async () => {
    const base = '/v1/providers/oa/credentials';
    const cases: [unknown, number, string, string][] = [
      [{ label: 'x', credential: 'k', extra: 1 }, 400, 'INVALID_JSON', 'extra'],
      [{ label: 'x', credential: 'k', ref: 'cred_x' }, 400, 'INVALID_JSON', 'ref'],
      [{ label: '', credential: 'k' }, 400, 'INVALID_REQUEST', 'label'],
      [{ label: 'x'.repeat(65), credential: 'k' }, 400, 'INVALID_REQUEST', 'label'],
      [{ label: 'a\tb', credential: 'k' }, 400, 'INVALID_REQUEST', 'label'],
      [{ label: 'x', credential: 'k', weight: 0 }, 400, 'INVALID_REQUEST', 'weight'],
      [{ label: 'x', credential: 'k', weight: 101 }, 400, 'INVALID_REQUEST', 'weight'],
      [{ label: 'x', credential: 'k', weight: 1.5 }, 400, 'INVALID_REQUEST', 'weight'],
      [{ label: 'x' }, 400, 'INVALID_REQUEST', 'credential'],
      [{ label: 'x', credential: 'has space' }, 400, 'INVALID_REQUEST', 'credential'],
      [{ label: 'spare', credential: 'k' }, 409, 'CONFLICT', 'label'],
    ];
    for (const [body, status, code, param] of cases) await refused('POST', base, body, status, code, param);
    const [first] = (await ok('GET', base)).data;
    await refused('PATCH', `${base}/${first.id}`, { weight: 101 }, 400, 'INVALID_REQUEST', 'weight');
    await refused('PATCH', `${base}/${first.id}`, { label: 'spare' }, 409, 'CONFLICT', 'label');
    await refused('PATCH', `${base}/${first.id}`, { ref: 'x' }, 400, 'INVALID_JSON', 'ref');
    for (const method of ['PATCH', 'DELETE']) {
      await refused(
        method,
        `${base}/key_01ARZ3NDEKTSV4RRFFQ69G5FAV`,
        method === 'PATCH' ? {} : undefined,
        404,
        'NOT_FOUND',
        'credId',
      );
      await refused(
        method,
        `${base}/${'k'.repeat(3000)}`,
        method === 'PATCH' ? {} : undefined,
        404,
        'NOT_FOUND',
        'credId',
      );
      await refused(
        method,
        `/v1/providers/none/credentials/${first.id}`,
        method === 'PATCH' ? {} : undefined,
        404,
        'NOT_FOUND',
        'id',
      );
    }
    await refused('GET', '/v1/providers/none/credentials', undefined, 404, 'NOT_FOUND', 'id');
    await refused('GET', `/v1/providers/${'p'.repeat(3000)}/credentials`, undefined, 404, 'NOT_FOUND', 'id');
    await ok('POST', '/v1/providers', { kind: 'embedded', id: 'inside' }, 201);
    await refused(
      'POST',
      '/v1/providers/inside/credentials',
      { label: 'x', credential: 'k' },
      400,
      'INVALID_REQUEST',
      'credential',
    );
    // Sixteen at most.
    const have = (await ok('GET', base)).data.length;
    for (let i = have; i < 16; i++) await ok('POST', base, { label: `k${i}`, credential: `${KEY}-n${i}` }, 201);
    await refused('POST', base, { label: 'k16', credential: `${KEY}-n16` }, 400, 'INVALID_REQUEST', 'credential');
    for (const c of (await ok('GET', base)).data.filter((c: { label: string }) => /^k\d+$/.test(c.label)))
      assert.deepEqual(await ok('DELETE', `${base}/${c.id}`), { id: c.id, deleted: true });
    assert.equal((await ok('GET', base)).data.length, 3);
  });

  test('a limit may name a credential that exists (scope `credential`), and no other', async () => {
    const limit = (id: string) => ({
      name: 'per key',
      scope: { kind: 'credential', id },
      window: 'day',
      metric: 'requests',
      max: 100,
      enabled: false,
    });
    await refused('POST', '/v1/limits', limit('key_01ARZ3NDEKTSV4RRFFQ69G5FAV'), 400, 'INVALID_REQUEST', 'scope.id');
    await refused(
      'POST',
      '/v1/limits',
      { ...limit('x'), scope: { kind: 'credential' } },
      400,
      'INVALID_REQUEST',
      'scope.id',
    );
    const [def] = (await ok('GET', '/v1/providers/oa/credentials')).data;
    const made = await ok('POST', '/v1/limits', limit(def.id), 201);
    assert.deepEqual(made.scope, { kind: 'credential', id: def.id });
    await ok('DELETE', `/v1/limits/${made.id}`);
  });

  test('a read token lists keys; writing one needs manage', async () => {
    const made = await svc.request('POST', '/v1/tokens', { body: { name: 'keys-read', scopes: ['read'] } });
    svc.markSecretBearing(made);
    const token = made.json.secret as string;
    assert.equal((await svc.request('GET', '/v1/providers/oa/credentials', { token })).status, 200);
    const write = await svc.request('POST', '/v1/providers/oa/credentials', {
      token,
      body: { label: 'no', credential: 'k' },
    });
    assert.equal(write.status, 403);
    assert.equal(write.json.error.details.requiredScope, 'manage');
  });

  test('a key refused upstream is set aside on every thread and announced once; an edit brings it back', async () => {
    assert.ok(providers, 'the control service was captured at start');
    const events = await openLiveStream({
      port: svc.port,
      path: '/v1/events?types=credential.rejected',
      headers: { authorization: `Bearer ${svc.adminToken}` },
    });
    const [def, spare] = (await ok('GET', '/v1/providers/oa/credentials')).data;
    assert.equal(await providers!.rejectCredential('oa', def.id, 401), true);
    assert.equal(await providers!.rejectCredential('oa', def.id, 401), false);
    const event = await events.next();
    assert.equal(event?.event, 'credential.rejected');
    assert.deepEqual(event?.data, { providerId: 'oa', credentialId: def.id, label: 'default', status: 401 });
    const listed = (await ok('GET', '/v1/providers/oa/credentials')).data[0];
    assert.equal(listed.rejected, true);
    // The spare key is used now: the fake refuses it, so the first call fails upstream and sets the spare aside
    // too (the third is disabled already). Each call after it, on whichever thread, is refused before any upstream
    // call.
    const first = await svc.request('POST', '/v1/chat/completions', { body: chat() });
    assert.equal(first.json.error.code, 'UPSTREAM_AUTH_FAILED', first.text);
    const threads = new Set<number>();
    for (let i = 0; i < 16; i++) {
      const reply = await svc.request('POST', '/v1/chat/completions', { body: chat() });
      assert.equal(reply.status, 409, reply.text);
      assert.equal(reply.json.error.code, 'PROVIDER_CREDENTIAL_MISSING');
      assert.deepEqual(reply.json.error.details, { providerId: 'oa', credentials: 3, rejected: 2, disabled: 1 });
      threads.add(await threadOf(reply));
    }
    if (inProcessDefaults.edgeThreads === 2)
      assert.deepEqual([...threads].sort(), [0, 1], 'both edge threads served calls');
    // Any PATCH clears the refusal.
    const back = await ok('PATCH', `/v1/providers/oa/credentials/${def.id}`, {});
    assert.equal(back.rejected, false);
    // A report of a refusal that reaches the control plane after the edit is about the key as it was: dropped.
    const seen = Date.parse(listed.updatedAt);
    assert.equal(await providers!.rejectCredential('oa', def.id, 401, seen), false);
    assert.equal((await ok('GET', '/v1/providers/oa/credentials')).data[0].rejected, false);
    assert.equal((await svc.request('POST', '/v1/chat/completions', { body: chat() })).status, 200);
    const audit = (await ok('GET', '/v1/audit-events?action=credential.reject')).data;
    // The spare refused at the first test's call and at the first call above; the default called here.
    const refusals = audit.map((a: { metadata: { credentialId: string; status: number } }) => a.metadata);
    assert.deepEqual(
      refusals.map((m: { credentialId: string }) => (m.credentialId === def.id ? 'default' : 'spare')).sort(),
      ['default', 'spare', 'spare'],
    );
    assert.ok(refusals.every((m: { credentialId: string; status: number }) => m.status === 401));
    assert.ok(refusals.some((m: { credentialId: string }) => m.credentialId === spare.id));
    events.close();
  });

  test('a new key replaces the old; DELETE removes one; PATCH of the provider leaves one `default`', async () => {
    const base = '/v1/providers/oa/credentials';
    const [def, spare, off] = (await ok('GET', base)).data;
    await ok('PATCH', `${base}/${spare.id}`, { credential: KEYS[0], enabled: true, label: 'spare-2' });
    await ok('DELETE', `${base}/${def.id}`);
    await ok('DELETE', `${base}/${off.id}`);
    // The spare now holds the key the fake accepts.
    assert.equal((await svc.request('POST', '/v1/chat/completions', { body: chat() })).status, 200);
    await refused('DELETE', `${base}/${def.id}`, undefined, 404, 'NOT_FOUND', 'credId');
    await ok('PATCH', '/v1/providers/oa', { credential: KEYS[0] });
    const after = (await ok('GET', base)).data;
    assert.deepEqual(
      after.map((c: { label: string }) => c.label),
      ['default'],
    );
    assert.notEqual(after[0].id, def.id);
    await ok('PATCH', '/v1/providers/oa', { credential: null });
    assert.deepEqual((await ok('GET', base)).data, []);
    const provider = await ok('GET', '/v1/providers/oa');
    assert.equal(provider.credentials, 0);
    assert.equal(provider.credentialConfigured, false);
    await ok('PATCH', '/v1/providers/oa', { credential: KEYS[0] });
  });

  test('no key is anywhere in clear: responses, the log, audit records, any file of the data directory', async () => {
    const secrets = [...KEYS, ...Array.from({ length: 16 }, (_, i) => `${KEY}-n${i}`)];
    const audit = await svc.request('GET', '/v1/audit-events?resourceType=provider&limit=500');
    assert.ok(audit.json.data.some((e: { action: string }) => e.action === 'credential.update'));
    for (const secret of secrets) {
      assert.ok(!svc.responsesText().includes(secret), 'a response held a key');
      assert.ok(!svc.log().includes(secret), 'the log held a key');
      assert.ok(!audit.text.includes(secret));
      for (const file of allFiles(svc.home)) assert.ok(!readFileSync(file).includes(secret), `${file} holds a key`);
    }
    // Nor a vault reference, nor a label (user text stays out of audit metadata).
    assert.ok(
      !/cred_|spare|default/.test(JSON.stringify(audit.json.data.map((e: { metadata: unknown }) => e.metadata))),
    );
    assert.ok(!/cred_[0-9A-Z]{26}/.test(svc.responsesText()), 'a response held a vault reference');
  });
});

/** Which thread answered: the `edgeThread` of its request line, 0 for the main thread. */
async function threadOf(reply: Reply): Promise<number> {
  const reqId = reply.headers['x-request-id'];
  const line = await svc.waitForLog((l) => l.reqId === reqId && l.msg === 'request');
  return (line.edgeThread as number | undefined) ?? 0;
}

describe('a provider stored with one key before credentials existed', () => {
  test('is upgraded in place at start, and calls go on with the key the vault held', async () => {
    const home = tempHome();
    const vault = await openVault({ dataDir: home, prefer: 'file' });
    const ref = await vault.put(KEYS[0]!);
    const env = openStoreEnv(home);
    const old = {
      id: 'old',
      kind: 'openai',
      displayName: 'Old',
      baseUrl: oa.baseUrl,
      enabled: true,
      autoProxyModels: true,
      credentialRef: ref,
      hints: {},
      timeouts: { ...DEFAULT_TIMEOUTS },
      createdAt: 1_700_000_000_000,
      updatedAt: 1_700_000_000_000,
    };
    await env.commit(() => env.db('providers').put('old', old));
    await env.close();
    const upgraded = await startInProcess({ home });
    try {
      assert.ok(upgraded.logLines().some((l) => l.msg === 'provider records upgraded to hold several credentials'));
      const list = await upgraded.request('GET', '/v1/providers/old/credentials');
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(
        list.json.data.map((c: { label: string; weight: number; enabled: boolean }) => [c.label, c.weight, c.enabled]),
        [['default', 1, true]],
      );
      const refreshed = await upgraded.request('POST', '/v1/providers/old/actions/refresh-models');
      assert.equal(refreshed.status, 200, refreshed.text);
      const call = await upgraded.request('POST', '/v1/chat/completions', {
        body: { model: 'old/gpt-keys', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(call.status, 200, call.text);
      const audit = await upgraded.request('GET', '/v1/audit-events?action=provider.upgrade');
      assert.deepEqual(
        audit.json.data.map((e: { resourceId: string; actorType: string }) => [e.resourceId, e.actorType]),
        [['old', 'system']],
      );
    } finally {
      await upgraded.stop();
    }
    // Written back: the stored record holds the list, the reference as it was.
    const reopened = openStoreEnv(home);
    const stored = reopened.db<Record<string, unknown>>('providers').get('old')!;
    await reopened.close();
    assert.equal('credentialRef' in stored, false);
    assert.deepEqual(
      (stored.credentials as { ref: string; label: string }[]).map((c) => [c.label, c.ref]),
      [['default', ref]],
    );
  });
});
