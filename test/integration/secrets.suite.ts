import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { startInProcess } from '../helpers/in-process.ts';

// Every token secret the suite sees must be absent from the log, from every response except the one that
// created it, and from the data directory's bytes (only SHA-256 digests are at rest).

test('no token secret leaks into the log, responses or the data directory', async () => {
  const svc = await startInProcess();
  const secrets = [svc.adminToken];
  try {
    for (const scopes of [['inference'], ['read'], ['manage'], ['admin']]) {
      const created = await svc.request('POST', '/v1/tokens', { body: { name: `t-${scopes[0]}`, scopes } });
      assert.equal(created.status, 201);
      svc.markSecretBearing(created);
      secrets.push(created.json.secret);
    }
    const [inference, read, manage] = secrets.slice(1) as [string, string, string];
    const carriers = (t: string): Record<string, string>[] => [
      { authorization: `Bearer ${t}` },
      { 'x-service-token': t },
      { 'x-api-key': t },
    ];
    // A wide workload: successes and failures of every route, with tokens in every carrier.
    for (const token of secrets) {
      for (const headers of carriers(token)) {
        await svc.request('GET', '/v1/settings', { token: null, headers });
        await svc.request('GET', '/v1/tokens', { token: null, headers });
        await svc.request('GET', '/v1/audit-events?limit=500', { token: null, headers });
        await svc.request('PATCH', '/v1/settings', { token: null, headers, body: { usage: { retentionDays: 100 } } });
        await svc.request('PATCH', '/v1/settings', { token: null, headers, body: '{"bad":' });
        await svc.request('GET', '/v1/nope', { token: null, headers });
        await svc.request('DELETE', '/v1/settings', { token: null, headers });
        await svc.request('GET', '/health', { token: null, headers: { ...headers, host: 'evil.example' } });
      }
    }
    // Secrets where error messages echo client input: an unknown field, a query parameter, a bad value.
    await svc.request('PATCH', '/v1/settings', { body: { cors: { allowedOrigins: [inference] } } });
    await svc.request('POST', '/v1/tokens', { body: { name: 'x', [read]: true } });
    await svc.request('GET', `/v1/audit-events?resourceId=${manage}`);
    await svc.request('GET', `/v1/audit-events?${manage}=1`);
    const ids = (await svc.request('GET', '/v1/tokens')).json.data.map((t: { id: string }) => t.id);
    await svc.request('PATCH', `/v1/tokens/${ids[1]}`, { body: { name: 'renamed' } });
    await svc.request('DELETE', `/v1/tokens/${ids[2]}`);
  } finally {
    assert.equal(await svc.stop(), 0);
  }

  const log = svc.log();
  const responses = svc.responsesText();
  assert.ok(log.split('\n').length > 100, 'the workload was logged');
  const files = readdirSync(svc.home, { recursive: true, encoding: 'utf8' }).filter(
    (f) => f !== 'token' && statSync(join(svc.home, f)).isFile(),
  );
  for (const secret of secrets) {
    assert.ok(!log.includes(secret), 'a secret reached the log');
    assert.ok(!responses.includes(secret), 'a secret reached a response');
    for (const f of files) assert.ok(!readFileSync(join(svc.home, f)).includes(secret), `a secret is in ${f} in clear`);
  }
});
