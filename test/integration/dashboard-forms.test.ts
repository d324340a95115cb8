import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import * as openaiFake from '../fakes/openai.ts';
import { openLiveStream } from '../fakes/sse-client.ts';
import {
  callApi,
  emptyStateText,
  openDashboard,
  eventually,
  type DashboardBrowser,
} from '../helpers/dashboard-browser.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// W3.3 item 2: the dashboard's set-up forms in Chromium, 800 px wide, driven as a person would (labels, Enter
// submits, a confirming button that takes the focus), each form's effect read back through the API: providers
// and their keys, tokens and pairing, model aliases and hiding. A key typed into a form never stays in the page
// (the token secret is shown once, by design); no console error; no request leaves the service's origin. The
// Gauge set-up and services forms are in dashboard-gauge-setup.test.ts. The limits view (W3.6) is the last block here.

const OPENAI_KEY = `fake-openai-forms-${process.pid}-0123456789`;
let oa: openaiFake.OpenAIFake;

let svc: InProcessService;
let b: DashboardBrowser;
let page: Page;
let expectedRefusals: string[];
let typedSecrets: string[];
const openView = (view: string) => b.openView(view);
const assertClean = (view: string) => b.assertClean(view);
const emptyState = (what: string) => emptyStateText(page, what);
const api = (method: string, path: string, body?: unknown) => callApi(svc, method, path, body);

before(async () => {
  oa = await openaiFake.start({ apiKey: OPENAI_KEY });
  oa.setModels([{ id: 'gpt-test' }, { id: 'gpt-other' }]);
  svc = await startInProcess();
  b = await openDashboard(svc);
  ({ page, expectedRefusals, typedSecrets } = b);
});

after(async () => {
  await b?.close();
  await svc?.stop();
  await oa?.close();
});

describe('the dashboard set-up forms, 800 px wide: providers, tokens, models', () => {
  test('signs in with the admin token', () => b.signIn());

  test('providers: add one with its key, test, disable, enable, an error inline, remove', async () => {
    await openView('providers');
    assert.deepEqual((await api('GET', '/v1/providers')).data, []);
    assert.match(await emptyState('providers'), /No providers yet\. Add one below/);

    const form = page.locator('form[data-form=add-provider]');
    await form.getByLabel('Kind').selectOption('openai');
    await form.getByLabel('ID').fill('fake');
    await form.getByLabel('Base URL').fill(oa.baseUrl);
    await form.getByLabel('Name').fill('Fake OpenAI');
    typedSecrets.push(OPENAI_KEY);
    await form.getByLabel('API key').fill(OPENAI_KEY);
    assert.equal(await form.getByLabel('API key').getAttribute('type'), 'password');
    assert.equal(await form.getByLabel('API key').getAttribute('autocomplete'), 'off');
    await form.getByLabel('API key').press('Enter');
    const row = page.locator('tr[data-provider=fake]');
    await row.waitFor();
    const p = await api('GET', '/v1/providers/fake');
    assert.deepEqual(
      [p.kind, p.baseUrl, p.displayName, p.credentialConfigured, p.enabled],
      ['openai', oa.baseUrl, 'Fake OpenAI', true, true],
    );
    assert.equal(await row.getAttribute('data-key'), 'stored');
    await assertClean('providers');

    // The stored key works: the test action lists the fake's models.
    await row.locator('button[data-action=test]').click();
    await eventually(
      async () => assert.equal(await row.locator('[data-tested]').getAttribute('data-tested'), 'true'),
      'the test result',
    );

    await row.locator('input[data-action=enable]').click();
    await eventually(async () => assert.equal(await row.getAttribute('data-enabled'), 'false'), 'shown disabled');
    assert.equal((await api('GET', '/v1/providers/fake')).enabled, false);
    await row.locator('input[data-action=enable]').click();
    await eventually(async () => assert.equal(await row.getAttribute('data-enabled'), 'true'), 'shown enabled');
    assert.equal((await api('GET', '/v1/providers/fake')).enabled, true);

    // A taken ID: the API's 409 in plain words beside the form, the key field emptied.
    const second = `${OPENAI_KEY}-second`;
    typedSecrets.push(second);
    await form.getByLabel('ID').fill('fake');
    await form.getByLabel('Base URL').fill(oa.baseUrl);
    await form.getByLabel('API key').fill(second);
    expectedRefusals.push('409 /v1/providers');
    await form.getByRole('button', { name: 'Add provider' }).click();
    const error = form.locator('[role=alert]');
    await error.waitFor();
    assert.match((await error.textContent())!, /fake/);
    assert.equal(await form.getByLabel('API key').inputValue(), '');
    assert.equal((await api('GET', '/v1/providers')).data.length, 1);
    await assertClean('providers');

    // Remove asks once more, with the focus on the confirming button.
    await row.locator('button[data-action=remove]').click();
    await page.keyboard.press('Enter');
    await eventually(async () => assert.equal(await row.count(), 0), 'the row goes');
    assert.equal((await svc.request('GET', '/v1/providers/fake')).status, 404);
  });

  test('provider keys: add one (typed once), disable it, an error inline, remove it', async () => {
    await api('POST', '/v1/providers', { kind: 'openai', id: 'keyed', baseUrl: oa.baseUrl, credential: OPENAI_KEY });
    await openView('providers');
    await page.locator('section.providers').getByRole('button', { name: 'Reload' }).click();
    const row = page.locator('tr[data-provider=keyed]');
    assert.equal(await row.locator('[data-key-count]').textContent(), '1 stored');
    await row.locator('button[data-action=keys]').click();
    const keys = page.locator('[data-keys=keyed][data-keys-ready=true]');
    await keys.waitFor();
    assert.equal(await keys.locator('tr[data-key-id]').count(), 1);
    const form = keys.locator('form[data-form=add-key]');
    const spare = `${OPENAI_KEY}-spare`;
    typedSecrets.push(spare);
    await form.getByLabel('Label').fill('spare');
    await form.getByLabel('Weight').fill('3');
    await form.getByLabel('API key').fill(spare);
    assert.equal(await form.getByLabel('API key').getAttribute('type'), 'password');
    await form.getByLabel('API key').press('Enter');
    await eventually(async () => assert.equal(await keys.locator('tr[data-key-id]').count(), 2), 'the new key listed');
    const added = (await api('GET', '/v1/providers/keyed/credentials')).data[1];
    assert.deepEqual([added.label, added.weight, added.enabled], ['spare', 3, true]);
    await eventually(
      async () => assert.equal(await row.locator('[data-key-count]').textContent(), '2 stored'),
      'count',
    );
    const key = keys.locator(`tr[data-key-id=${added.id}]`);
    await key.locator('input[data-action=enable-key]').click();
    await eventually(async () => assert.equal(await key.getAttribute('data-enabled'), 'false'), 'shown disabled');
    assert.equal((await api('GET', '/v1/providers/keyed/credentials')).data[1].enabled, false);
    // A taken label: the 409 in plain words beside the form, the key field emptied.
    await form.getByLabel('Label').fill('spare');
    await form.getByLabel('API key').fill(spare);
    expectedRefusals.push('409 /v1/providers/keyed/credentials');
    await form.getByRole('button', { name: 'Add key' }).click();
    await form.locator('[role=alert]').waitFor();
    assert.match((await form.locator('[role=alert]').textContent())!, /already has a credential labelled `spare`/);
    assert.equal(await form.getByLabel('API key').inputValue(), '');
    await assertClean('providers');
    await key.locator('button[data-action=remove-key]').click();
    await page.keyboard.press('Enter');
    await eventually(async () => assert.equal(await key.count(), 0), 'the key goes');
    assert.equal((await api('GET', '/v1/providers/keyed/credentials')).data.length, 1);
    await api('DELETE', '/v1/providers/keyed');
  });

  test('tokens: create one, its secret shown once with a copy button; revoke it', async () => {
    await openView('tokens');
    const form = page.locator('form[data-form=create-token]');
    await form.locator('input[value=read]').check();
    await form.getByLabel('Name').fill('ci agents');
    await form.getByLabel('Name').press('Enter');
    const box = page.locator('[data-secret-for]');
    await box.waitFor();
    const id = (await box.getAttribute('data-secret-for'))!;
    const field = box.getByLabel("The new token's secret");
    const secret = await field.inputValue();
    assert.match(secret, /^sk-svc-[A-Za-z0-9_-]{43}$/);
    const token = await api('GET', `/v1/tokens/${id}`);
    assert.deepEqual([token.name, token.scopes], ['ci agents', ['inference', 'read']]);
    assert.equal((await svc.request('GET', '/v1/settings', { token: secret })).status, 200, 'the secret reads');

    await box.locator('button[data-action=copy]').click();
    await eventually(async () => assert.match((await box.getByRole('status').textContent())!, /Copied/), 'copied');
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), secret);
    // Without the clipboard API the secret is selected for Ctrl+C instead.
    await page.evaluate("Object.defineProperty(navigator, 'clipboard', { value: undefined, configurable: true })");
    await box.locator('button[data-action=copy]').click();
    await eventually(async () => assert.match((await box.getByRole('status').textContent())!, /Ctrl\+C/), 'selected');
    assert.deepEqual(
      await page.evaluate('[document.activeElement.selectionStart, document.activeElement.selectionEnd]'),
      [0, secret.length],
    );

    await box.locator('button[data-action=done]').click();
    await eventually(async () => assert.equal(await box.count(), 0), 'the secret goes');
    typedSecrets.push(secret);
    await assertClean('tokens');

    const row = page.locator(`tr[data-token="${id}"]`);
    await row.locator('button[data-action=revoke]').click();
    await page.keyboard.press('Enter');
    await eventually(async () => assert.equal(await row.count(), 0), 'the row goes');
    assert.equal((await svc.request('GET', `/v1/tokens/${id}`)).status, 404);
    assert.equal((await svc.request('GET', '/v1/settings', { token: secret })).status, 401, 'revoked');

    // Creating without a scope: the API's 400 inline.
    await form.locator('input[value=inference]').uncheck();
    await form.getByLabel('Name').fill('nothing');
    expectedRefusals.push('400 /v1/tokens');
    await form.getByRole('button', { name: 'Create token' }).click();
    await form.locator('[role=alert]').waitFor();
    assert.ok(!(await api('GET', '/v1/tokens')).data.some((t: { name: string }) => t.name === 'nothing'));
  });

  test('pairing: a pending request is approved, another denied, from the tokens view', async () => {
    assert.match(await emptyState('pairing'), /No app is asking for a token/);
    const ask = (clientName: string) =>
      openLiveStream({
        port: svc.port,
        method: 'POST',
        path: '/v1/pairing/requests',
        body: { clientName, scopes: ['inference'] },
      });
    const first = await ask('Editor plugin');
    const pending = await first.next();
    assert.equal(pending?.event, 'pairing.pending');
    const row = page.locator(`tr[data-pairing="${pending!.data.id}"]`);
    await row.waitFor({ timeout: 10_000 }); // read again every 5 s
    assert.equal(await row.locator('code').textContent(), pending!.data.userCode);
    await row.locator('button[data-action=approve]').click();
    const approved = await first.next();
    assert.equal(approved?.event, 'pairing.approved');
    first.close();
    assert.equal((await api('GET', `/v1/tokens/${approved!.data.token.id}`)).name, 'Editor plugin');
    await eventually(async () => assert.equal(await row.count(), 0), 'the approved request goes');

    const second = await ask('Unknown app');
    const other = (await second.next())!;
    await page.click('section.tokens .toolbar button');
    await page.locator(`tr[data-pairing="${other.data.id}"] button[data-action=deny]`).click();
    assert.equal((await second.next())?.event, 'pairing.denied');
    second.close();
    assert.deepEqual((await api('GET', '/v1/pairing/requests')).data, []);
  });

  test('models: an alias from the form, a taken alias refused inline, hiding; families in plain words', async () => {
    await openView('models');
    assert.match(await emptyState('models'), /No models yet\. Add a provider/);
    await api('POST', '/v1/providers', { kind: 'openai', id: 'fake', baseUrl: oa.baseUrl, credential: OPENAI_KEY });
    await api('POST', '/v1/providers/fake/actions/refresh-models');
    await page.click('section.models .toolbar button');
    const form = page.locator('form[data-form=add-alias]');
    await form.getByLabel('For the model').selectOption('fake/gpt-test');
    await form.getByLabel('Alias').fill('fast');
    await form.getByLabel('Alias').press('Enter');
    const record = (id: string) => api('GET', `/v1/catalog/models/${encodeURIComponent(id)}`);
    await eventually(async () => assert.deepEqual((await record('fake/gpt-test')).aliases, ['fast']), 'alias saved');
    const called = await api('POST', '/v1/chat/completions', {
      model: 'fast',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(called.model, 'gpt-test', 'the alias resolves');

    await form.getByLabel('For the model').selectOption('fake/gpt-other');
    await form.getByLabel('Alias').fill('fast');
    expectedRefusals.push('409 /v1/catalog/models/fake%2Fgpt-other');
    await form.getByLabel('Alias').press('Enter');
    assert.match((await form.locator('[role=alert]').textContent())!, /fast/);
    assert.deepEqual((await record('fake/gpt-other')).aliases, []);

    const row = page.locator('tr[data-model="fake/gpt-other"]');
    await row.locator('input[data-action=hide]').click();
    await eventually(async () => assert.equal(await row.getAttribute('data-hidden'), 'true'), 'shown hidden');
    const listed = (await api('GET', '/v1/models')).data.map((m: { id: string }) => m.id);
    assert.ok(listed.includes('fake/gpt-test') && !listed.includes('fake/gpt-other'), String(listed));

    const text = (await page.textContent('[data-chart=models]'))!;
    assert.match(text, /OpenAI-style chat completions/);
    assert.doesNotMatch(text, /style[AB]/);
    await assertClean('models');
  });

  test('no console error but the refusals provoked on purpose, and no request left the service', () => {
    assert.deepEqual(b.consoleErrors, []);
    assert.deepEqual(b.refusals.sort(), b.expectedRefusals.sort());
    assert.deepEqual(b.foreignRequests, []);
  });
});

describe('the limits view, 800 px wide', () => {
  const limits = async () => (await api('GET', '/v1/limits')).data;
  const byName = async (name: string) => (await limits()).find((l: { name: string }) => l.name === name);

  test('add limits through the form (a token, the service, each session); a refusal inline', async () => {
    await openView('limits');
    assert.match(
      await emptyState('limits'),
      /^No limits\. A limit stops a runaway agent before its calls go upstream: add one below\.$/,
    );
    const created = await svc.request('POST', '/v1/tokens', { body: { name: 'limited', scopes: ['inference'] } });
    svc.markSecretBearing(created);
    const tokenId = created.json.token.id;

    const form = page.locator('form[data-form=add-limit]');
    await form.getByLabel('Name').fill('Agent dollars');
    await form.getByLabel('Applies to').selectOption('token');
    await form.getByLabel('Token ID').fill(tokenId);
    await form.getByLabel('Window').selectOption('hour');
    await form.getByLabel('Counts').selectOption('usd');
    await form.getByLabel('Max (USD)').fill('2.5');
    await form.getByLabel('Max (USD)').press('Enter');
    const row = page.locator('tr[data-limit]', { hasText: 'Agent dollars' });
    await row.waitFor();
    const agent = await byName('Agent dollars');
    assert.deepEqual(
      [agent.scope, agent.window, agent.metric, agent.max, agent.enabled],
      [{ kind: 'token', id: tokenId }, 'hour', 'usd', 2.5, true],
    );
    const counter = row.locator('.counter');
    assert.equal(await counter.getAttribute('data-used'), '0');
    assert.equal(await counter.getAttribute('data-resets'), agent.counters[0].resetsAt);
    assert.match(
      (await row.textContent())!,
      /at most \$2\.50 an hour.*\$0\.00 \/ \$2\.50 \(0%\).*resets in \d+[hm] \d+[ms]/s,
    );

    await form.getByLabel('Name').fill('Whole service');
    await form.getByLabel('Applies to').selectOption('service');
    assert.equal(await form.getByLabel('Token ID').count(), 0, 'the service takes no ID');
    await form.getByLabel('Window').selectOption('day');
    await form.getByLabel('Counts').selectOption('requests');
    await form.getByLabel('Max (requests)').fill('1000');
    await form.getByLabel('Name').press('Enter');
    await page.locator('tr[data-limit]', { hasText: 'Whole service' }).waitFor();
    const service = await byName('Whole service');
    assert.deepEqual(
      [service.scope, service.window, service.metric, service.max],
      [{ kind: 'service', id: null }, 'day', 'requests', 1000],
    );

    await form.getByLabel('Name').fill('Sessions');
    await form.getByLabel('Applies to').selectOption('session');
    await form.getByLabel('Counts').selectOption('total_tokens');
    await form.getByLabel(/^Max/).fill('50000');
    await form.getByLabel('Name').press('Enter');
    const sessions = page.locator('tr[data-limit]', { hasText: 'Sessions' });
    await sessions.waitFor();
    assert.deepEqual((await byName('Sessions')).scope, { kind: 'session', id: null });
    assert.match((await sessions.textContent())!, /Each session; at most 50,000 total tokens a day/);
    assert.match((await sessions.textContent())!, /No session has used it this window\./);

    // A token that does not exist: the API's 400 beside the form, nothing added.
    await form.getByLabel('Name').fill('Nobody');
    await form.getByLabel('Applies to').selectOption('token');
    await form.getByLabel('Token ID').fill('tok_nothing');
    await form.getByLabel(/^Max/).fill('3');
    expectedRefusals.push('400 /v1/limits');
    await form.getByLabel('Name').press('Enter');
    assert.match((await form.locator('[role=alert]').textContent())!, /No token `tok_nothing`/);
    assert.equal((await limits()).length, 3);
    await assertClean('limits');
  });

  test('disable one, change its max, remove it; each through the API', async () => {
    const agent = await byName('Agent dollars');
    const row = page.locator(`tr[data-limit="${agent.id}"]`);
    await row.locator('input[data-action=enable]').click();
    await eventually(async () => assert.equal(await row.getAttribute('data-enabled'), 'false'), 'shown disabled');
    assert.equal((await byName('Agent dollars')).enabled, false);

    await row.locator('button[data-action=edit-max]').click();
    const max = row.getByLabel('New max for Agent dollars (USD)');
    assert.equal(await max.inputValue(), '2.5');
    const focused = () => page.evaluate('document.activeElement?.id');
    await eventually(async () => assert.equal(await focused(), `max-${agent.id}`), 'the new max has the focus');
    await max.fill('4');
    await max.press('Enter');
    await eventually(async () => assert.equal(await row.getAttribute('data-max'), '4'), 'the new max shown');
    assert.deepEqual([(await byName('Agent dollars')).max, (await byName('Agent dollars')).enabled], [4, false]);
    await assertClean('limits');

    await row.locator('button[data-action=remove]').click();
    await page.keyboard.press('Enter');
    await row.waitFor({ state: 'detached' });
    assert.equal((await svc.request('GET', `/v1/limits/${agent.id}`)).status, 404);
    assert.equal((await limits()).length, 2);
  });

  test('the loop brake: turned on and off; a session it paused, resumed', async () => {
    const brake = page.locator('[data-brake]');
    assert.equal(await brake.getAttribute('data-brake'), 'off');
    await page.locator('button[data-action=brake]').click();
    await eventually(async () => assert.equal(await brake.getAttribute('data-brake'), 'on'), 'shown on');
    assert.equal((await api('GET', '/v1/limits/loop-brake')).enabled, true);
    assert.match(await emptyState('paused'), /No session is paused\./);

    // A scripted loop: the same tool call, five times, in one session (the brake's default repeats).
    await api('POST', '/v1/providers', { id: 'brake', kind: 'openai', baseUrl: oa.baseUrl, credential: OPENAI_KEY });
    await api('POST', '/v1/providers/brake/actions/refresh-models');
    const messages = [
      { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'ls', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c', content: 'x' },
    ];
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const reply = await svc.request('POST', '/v1/chat/completions', {
        headers: { 'x-session-id': 'looping' },
        body: { model: 'brake/gpt-test', messages },
      });
      statuses.push(reply.status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 429]);
    await page.locator('button', { hasText: 'Reload' }).click();
    const paused = page.locator('tr[data-session=looping]');
    await paused.waitFor();
    assert.match((await paused.textContent())!, /ls x 5/);
    await assertClean('limits');
    await paused.locator('button[data-action=resume]').click();
    await paused.waitFor({ state: 'detached' });
    assert.deepEqual((await api('GET', '/v1/limits/sessions')).data, []);
    await page.locator('button[data-action=brake]').click();
    await eventually(async () => assert.equal(await brake.getAttribute('data-brake'), 'off'), 'shown off');
    assert.equal((await api('GET', '/v1/limits/loop-brake')).enabled, false);
  });

  test('no console error but the refusals provoked on purpose, and no request left the service', () => {
    assert.deepEqual(b.consoleErrors, []);
    assert.deepEqual(b.refusals.sort(), b.expectedRefusals.sort());
    assert.deepEqual(b.foreignRequests, []);
  });
});

describe('a token revoked while its tab is signed in', () => {
  test("the next call refused with 401 signs the tab out (dashboard/api.js's one handler)", async () => {
    const { token, secret } = await api('POST', '/v1/tokens', { name: 'tab', scopes: ['read', 'manage'] });
    typedSecrets.push(secret);
    await page.goto(`${svc.url}/`);
    await page.evaluate('sessionStorage.clear()');
    await page.reload();
    await page.fill('#token', secret);
    await page.press('#token', 'Enter');
    await page.waitForSelector('section.usage[data-view-ready=true]');
    await api('DELETE', `/v1/tokens/${token.id}`);
    const before = b.refusals.length;
    await page.click('nav a[data-view=providers]');
    await page.waitForSelector('#token');
    assert.equal(await page.evaluate("sessionStorage.getItem('switchyard.token')"), null);
    assert.deepEqual(b.refusals.slice(before), ['401 /v1/providers']);
    assert.deepEqual(b.consoleErrors, []);
  });
});
