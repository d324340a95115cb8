import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FAMILIES } from '../../protocol/families.ts';
import { PROVIDER_KINDS } from '../../protocol/providers.ts';
import { SCOPES } from '../../protocol/scopes.ts';
import { USAGE_GROUP_BY } from '../../protocol/http/usage.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

let svc: InProcessService;
before(async () => {
  svc = await startInProcess();
  await svc.request('POST', '/v1/providers', {
    body: {
      kind: 'openai',
      id: 'secret-provider-name',
      credential: 'zz-capabilities-key',
      baseUrl: 'http://127.0.0.1:9/v1',
    },
  });
});
after(async () => {
  await svc.stop();
});

test('GET /v1/capabilities describes the running service by ID', async () => {
  const reply = await svc.request('GET', '/v1/capabilities');
  assert.equal(reply.status, 200);
  const doc = reply.json;
  assert.deepEqual(
    doc.families.map((f: { id: string }) => f.id),
    [...FAMILIES],
  );
  const chat = doc.families.find((f: { id: string }) => f.id === 'styleA.chat_completions');
  assert.deepEqual(chat.operations, [{ method: 'POST', path: '/v1/chat/completions', model: 'json', available: true }]);
  const edits = doc.families.find((f: { id: string }) => f.id === 'styleA.images').operations[1];
  assert.equal(edits.model, 'multipart');
  assert.deepEqual(
    doc.providerKinds.map((k: { id: string }) => k.id),
    [...PROVIDER_KINDS],
  );
  const anthropic = doc.providerKinds.find((k: { id: string }) => k.id === 'anthropic');
  assert.deepEqual(anthropic.families, ['styleB.messages']);
  assert.deepEqual(anthropic.hintHeaders, ['anthropic-beta']);
  assert.deepEqual(anthropic.providerActions, ['test', 'refresh-models']);
  assert.deepEqual(doc.actions.provider, ['test', 'refresh-models']);
  // Only what works (W2.7): the supervised services' actions, and of the model actions only the embedded runtime's.
  assert.deepEqual(doc.actions.service, ['start', 'stop', 'restart']);
  assert.equal(doc.features.services, true);
  assert.deepEqual(doc.actions.model, ['load', 'unload', 'benchmark']);
  assert.deepEqual(doc.providerKinds.find((k: { id: string }) => k.id === 'embedded').modelActions, [
    'load',
    'unload',
    'benchmark',
  ]);
  assert.deepEqual(doc.providerKinds.find((k: { id: string }) => k.id === 'ollama').modelActions, []);
  assert.deepEqual(doc.scopes, [...SCOPES]);
  assert.deepEqual(Object.keys(doc.presets.parameters), [...FAMILIES]);
  assert.ok(doc.presets.parameters['styleB.messages'].includes('top_k'));
  assert.deepEqual(doc.presets.scopeGroups[0], {
    id: 'generation',
    families: ['styleA.chat_completions', 'styleA.responses', 'styleB.messages'],
  });
  assert.deepEqual(doc.registrySources, [], 'nothing can be pulled yet');
  assert.deepEqual(doc.usage, { groupBy: [...USAGE_GROUP_BY] });
});

test('feature flags follow the routes actually served', async () => {
  const { features } = (await svc.request('GET', '/v1/capabilities')).json;
  assert.equal(features.providers, true);
  assert.equal(features.catalog, true);
  assert.equal(features.modelDiscovery, true);
  assert.equal(features.auditEvents, true);
  assert.equal(features.gateway, true);
  assert.equal(features.gauge, true);
  assert.equal(features.usage, true);
  assert.equal(features.hardware, true);
});

test('holds no records, credentials, references or paths', async () => {
  const reply = await svc.request('GET', '/v1/capabilities');
  for (const needle of ['secret-provider-name', 'zz-capabilities-key', 'cred_', svc.home, '127.0.0.1:9']) {
    assert.ok(!reply.text.includes(needle), needle);
  }
});

test('inference and read tokens may read it and /v1/models; a manage-only token may not', async () => {
  for (const [scopes, status] of [
    [['inference'], 200],
    [['read'], 200],
    [['manage'], 403],
  ] as const) {
    const created = await svc.request('POST', '/v1/tokens', { body: { name: scopes[0], scopes } });
    svc.markSecretBearing(created);
    const token = created.json.secret;
    assert.equal((await svc.request('GET', '/v1/capabilities', { token })).status, status, scopes[0]);
    assert.equal((await svc.request('GET', '/v1/models', { token })).status, status, scopes[0]);
  }
  const inference = (await svc.request('GET', '/v1/tokens')).json.data.find(
    (t: { name: string }) => t.name === 'inference',
  );
  assert.ok(inference);
});
