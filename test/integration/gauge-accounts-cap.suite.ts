import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// W3.5 item 11: Gauge keeps at most 200 accounts (each is polled on its schedule; a refresh names at most 200).

let svc: InProcessService;
before(async () => {
  svc = await startInProcess();
});
after(async () => {
  await svc.stop();
});

const body = (value: unknown) => ({ body: value });
async function expectError(
  method: string,
  path: string,
  status: number,
  code: string,
  options: { body?: unknown } = {},
) {
  const reply = await svc.request(method, path, options);
  assert.equal(reply.status, status, reply.text);
  assert.equal(reply.json.error.code, code);
  return reply;
}

test('at most 200 accounts: the next is 409 CONFLICT until one is deleted', async () => {
  const existing = (await svc.request('GET', '/v1/gauge/accounts')).json.data.filter((a: { id: string }) =>
    a.id.startsWith('acct_'),
  ).length;
  const made: string[] = [];
  for (let i = existing; i < 200; i++) {
    const created = await svc.request(
      'POST',
      '/v1/gauge/accounts',
      body({ providerId: 'openai', authMode: 'admin_key', enabled: false }),
    );
    assert.equal(created.status, 201, created.text);
    made.push(created.json.id);
  }
  const refused = await expectError(
    'POST',
    '/v1/gauge/accounts',
    409,
    'CONFLICT',
    body({ providerId: 'openai', authMode: 'admin_key', enabled: false }),
  );
  assert.match(refused.json.error.message, /At most 200/);
  assert.equal((await svc.request('DELETE', `/v1/gauge/accounts/${made.pop()}`)).status, 200);
  const again = await svc.request(
    'POST',
    '/v1/gauge/accounts',
    body({ providerId: 'openai', authMode: 'admin_key', enabled: false }),
  );
  assert.equal(again.status, 201, again.text);
  made.push(again.json.id);
  for (const id of made) assert.equal((await svc.request('DELETE', `/v1/gauge/accounts/${id}`)).status, 200);
});
