import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

let svc: InProcessService;
before(async () => {
  svc = await startInProcess();
});
after(async () => {
  await svc.stop();
});

test('the running service answers hardware telemetry from its actor, and refreshes it', async () => {
  const first = await svc.request('GET', '/v1/hardware/telemetry');
  assert.equal(first.status, 200, first.text);
  assert.equal(first.json.arch, process.arch);
  assert.equal(first.json.os.platform, process.platform);
  assert.ok(first.json.cpu.logicalCores >= 1);
  assert.ok(first.json.memory.totalBytes > 0);
  assert.ok(Array.isArray(first.json.gpus));
  const refreshed = await svc.request('POST', '/v1/hardware/refresh');
  assert.equal(refreshed.status, 200);
  assert.ok(Date.parse(refreshed.json.probedAt) >= Date.parse(first.json.probedAt));
  for (const reply of [first, refreshed]) assert.ok(!/\/(usr|dev|home|tmp|proc|sys)\//.test(reply.text), 'no paths');
  const created = await svc.request('POST', '/v1/tokens', { body: { name: 'agent', scopes: ['inference'] } });
  svc.markSecretBearing(created);
  assert.equal((await svc.request('GET', '/v1/hardware/telemetry', { token: created.json.secret })).status, 403);
});
