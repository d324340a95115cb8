import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { writeTinyModel } from '../helpers/gguf.ts';
import { tempHome } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// The first hour of a new user (issue 23): a fresh data directory has a models folder to drop a GGUF into,
// and the first file dropped there is served without a restart, under the `embedded` provider the service
// creates for it. A provider the user deletes afterwards stays deleted.

let svc: InProcessService;
let home: string;

before(async () => {
  home = tempHome();
  svc = await startInProcess({ home });
});
after(async () => {
  await svc?.stop();
  rmSync(home, { recursive: true, force: true });
});

const relisted = (name: string) => (l: Record<string, unknown>) =>
  l.msg === 're-listed the changed model library' && Array.isArray(l.added) && l.added.includes(name);

test('the models folder exists after the first start, empty', async () => {
  assert.ok(existsSync(join(home, 'models')));
  const reply = await svc.request('GET', '/v1/runtime/models');
  assert.deepEqual(reply.json, { data: [], problem: null });
  assert.equal((await svc.request('GET', '/v1/providers/embedded')).status, 404, 'no library, no provider');
});

test('the first GGUF dropped in is served without a restart', async () => {
  writeTinyModel(join(home, 'models', 'first.gguf'));
  await svc.waitForLog(relisted('first.gguf'));
  const openai = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
  const c = await openai.chat.completions.create({
    model: 'embedded/first',
    max_tokens: 3,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(c.choices[0]!.finish_reason, 'length');
  const created = await svc.request('GET', '/v1/audit-events?action=provider.create&resourceId=embedded');
  assert.equal(created.json.data[0].actorType, 'system');
});

test('a provider deleted by the user is not created again by the next file', async () => {
  const deleted = await svc.request('DELETE', '/v1/providers/embedded');
  assert.equal(deleted.status, 200, deleted.text);
  writeTinyModel(join(home, 'models', 'second.gguf'), { seed: 3 });
  await svc.waitForLog(relisted('second.gguf'));
  assert.equal((await svc.request('GET', '/v1/providers/embedded')).status, 404);
});
