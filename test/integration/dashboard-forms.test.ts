import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startOAuthDeviceFake, type OAuthDeviceFake } from '../fakes/gauge/oauth-device.ts';
import * as openaiFake from '../fakes/openai.ts';
import { openLiveStream } from '../fakes/sse-client.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// W3.3 item 2: the dashboard's set-up forms in Chromium, 800 px wide, driven as a person would (labels, Enter
// submits), each form's effect read back through the API. A key typed into a form never stays in the page
// (the token secret is shown once, by design); no console error; no request leaves the service's origin.

const CHROMIUM = process.env.SWITCHYARD_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = new URL('../../test-output/dashboard/', import.meta.url);
const OPENAI_KEY = `fake-openai-forms-${process.pid}-0123456789`;
const OR_KEY = `sk-or-v1-forms-test-${process.pid}-0123456789abcdef0123456789abcdef`;
const CLIENT_ID = 'Iv1.dashboardforms';

let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let oauth: OAuthDeviceFake;
let browser: Browser;
let page: Page;
const consoleErrors: string[] = [];
const foreignRequests: string[] = [];
/** Every secret typed into a form: none may be found in the page afterwards. */
const typedSecrets: string[] = [];
/**
 * Chromium logs each 4xx answer as a console error. The API's refusals a test provokes on purpose (to see them
 * shown inline) are counted here instead, and must be exactly those the tests expected.
 */
const refusals: string[] = [];
const expectedRefusals: string[] = [];

async function api(method: string, path: string, body?: unknown) {
  const reply = await svc.request(method, path, body === undefined ? {} : { body });
  assert.ok(reply.status < 300, `${method} ${path}: ${reply.status} ${reply.text}`);
  return reply.json;
}

/** Waits until `check` passes (the page re-renders after its own calls), then returns its value. */
async function eventually<T>(check: () => Promise<T>, what: string, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${what}: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

async function openView(view: string) {
  await page.click(`nav a[data-view=${view}]`);
  await page.waitForSelector(`section.${view}[data-view-ready=true]`);
}

/** The page's text, its fields' values and its storage hold none of the typed secrets; nothing is wider than 800 px. */
async function assertClean(view: string) {
  // A string, evaluated in the page (this file is not compiled against the DOM's types).
  const shown = (await page.evaluate(`({
    html: document.documentElement.outerHTML,
    values: [...document.querySelectorAll('input, textarea')].map((e) => e.value),
    width: document.documentElement.scrollWidth,
  })`)) as { html: string; values: string[]; width: number };
  for (const secret of typedSecrets) {
    assert.ok(!shown.html.includes(secret), `${view}: a typed secret is in the page`);
    assert.ok(!shown.values.some((v) => v.includes(secret)), `${view}: a typed secret is in a field`);
  }
  assert.ok(shown.width <= 800, `${view}: the page is ${shown.width} px wide`);
  await page.screenshot({ path: new URL(`forms-${view}.png`, SHOTS).pathname, fullPage: true });
}

before(async () => {
  oa = await openaiFake.start({ apiKey: OPENAI_KEY });
  oa.setModels([{ id: 'gpt-test' }, { id: 'gpt-other' }]);
  oauth = await startOAuthDeviceFake({ clientId: CLIENT_ID });
  // One protocol second of the device flow lasts 20 ms, so GitHub's 5 s poll interval is 0.1 s.
  svc = await startInProcess({ env: { SWITCHYARD_GAUGE_AUTH_SECOND_MS: '20' } });
  mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  // 800 px wide for the whole file: every view must read at that width.
  const context = await browser.newContext({ viewport: { width: 800, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svc.url });
  await context.route('**', (route) => {
    const url = route.request().url();
    if (new URL(url).origin === svc.url || url.startsWith('data:')) return route.continue();
    foreignRequests.push(url);
    return route.abort();
  });
  page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const refused = /^Failed to load resource: the server responded with a status of (4\d\d)/.exec(m.text());
    if (refused) refusals.push(`${refused[1]} ${new URL(m.location().url).pathname}`);
    else consoleErrors.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (err) => consoleErrors.push(`pageerror: ${err.message}`));
});

after(async () => {
  await browser?.close();
  await svc?.stop();
  await oa?.close();
  await oauth?.close();
});

describe('the dashboard set-up forms, 800 px wide', () => {
  test('signs in with the admin token', async () => {
    await page.goto(`${svc.url}/`);
    await page.fill('#token', svc.adminToken);
    await page.press('#token', 'Enter');
    await page.waitForSelector('section.usage[data-view-ready=true]');
  });

  test('providers: add one with its key, test, disable, enable, an error inline, remove', async () => {
    await openView('providers');
    assert.deepEqual((await api('GET', '/v1/providers')).data, []);
    assert.match((await page.textContent('[data-empty=providers]'))!, /No providers yet\. Add one below/);

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
    assert.match((await page.textContent('[data-empty=pairing]'))!, /No app is asking for a token/);
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
    assert.match((await page.textContent('[data-empty=models]'))!, /No models yet\. Add a provider/);
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

  test('Gauge set-up: turn on, connect an account with its key, switch sources and the account', async () => {
    await openView('gauge-setup');
    for (const empty of ['accounts', 'budgets', 'rules'])
      assert.match((await page.textContent(`[data-empty=${empty}]`))!, /below/, empty);
    await page.click('button[data-action=gauge]');
    await page.waitForSelector('[data-gauge-enabled=true]');
    assert.equal((await api('GET', '/v1/settings')).gauge.enabled, true);

    const form = page.locator('form[data-form=connect-account]');
    await form.getByLabel('Provider').selectOption('openrouter');
    await form.getByLabel('Label').fill('Team OpenRouter');
    await form.getByLabel('Base URL').fill('http://127.0.0.1:9/api/v1');
    typedSecrets.push(OR_KEY);
    await form.getByLabel('Key').fill(OR_KEY);
    assert.equal(await form.getByLabel('Key').getAttribute('type'), 'password');
    await form.getByLabel('Key').press('Enter');
    const accounts = async () =>
      (await api('GET', '/v1/gauge/accounts')).data.filter((a: { builtIn: boolean }) => !a.builtIn);
    const [account] = await eventually(async () => {
      const list = await accounts();
      assert.equal(list.length, 1);
      return list;
    }, 'the account is connected');
    assert.deepEqual(
      [account.providerId, account.authMode, account.label, account.credentialConfigured],
      ['openrouter', 'api_key', 'Team OpenRouter', true],
    );
    const source = (await api('GET', '/v1/gauge/sources')).data.find((s: { id: string }) => s.id === account.id);
    assert.equal(source.config.baseUrl, 'http://127.0.0.1:9/api/v1');
    const row = page.locator(`tr[data-account="${account.id}"]`);
    assert.equal(await row.getAttribute('data-key'), 'stored');
    await assertClean('gauge-setup');

    await row.locator('input[data-action=enable]').click();
    await eventually(async () => assert.equal(await row.getAttribute('data-enabled'), 'false'), 'shown disabled');
    assert.equal((await accounts())[0].enabled, false);

    const sources = async () =>
      Object.fromEntries(
        (await api('GET', '/v1/gauge/sources')).data.map((s: { id: string; enabled: boolean }) => [s.id, s.enabled]),
      );
    assert.deepEqual([(await sources())['claude-code'], (await sources()).codex], [false, false]);
    for (const id of ['claude-code', 'codex']) {
      const r = page.locator(`tr[data-source="${id}"]`);
      await r.locator('input[data-action=enable]').click();
      await eventually(async () => assert.equal(await r.getAttribute('data-enabled'), 'true'), `${id} shown on`);
    }
    assert.deepEqual([(await sources())['claude-code'], (await sources()).codex], [true, true]);
    const claude = page.locator('tr[data-source="claude-code"]');
    await claude.locator('input[data-action=enable]').click();
    await eventually(async () => assert.equal(await claude.getAttribute('data-enabled'), 'false'), 'shown off');
    assert.equal((await sources())['claude-code'], false);
  });

  test('Gauge set-up: Copilot by the device flow, first without an OAuth client (inline), then approved', async () => {
    const flow = page.locator('[data-device-flow=github-copilot]');
    expectedRefusals.push('400 /v1/gauge/auth-sessions');
    await flow.locator('button[data-action=device-flow]').click();
    assert.match((await flow.locator('[role=alert]').textContent())!, /oauthClients/);

    await api('PATCH', '/v1/settings', {
      gauge: { oauthClients: { 'github-copilot': { clientId: CLIENT_ID, baseUrl: oauth.origin } } },
    });
    await flow.locator('button[data-action=device-flow]').click();
    const code = flow.locator('strong.code');
    await code.waitFor();
    const userCode = (await code.textContent())!;
    assert.match(userCode, /^[0-9A-Z]{4}-[0-9A-Z]{4}$/);
    const token = `gho_forms${process.pid}0123456789abcdef`;
    oauth.approve(userCode, token);
    await flow.locator('[data-session-state=succeeded]').waitFor();
    const copilot = (await api('GET', '/v1/gauge/accounts')).data.find(
      (a: { authMode: string }) => a.authMode === 'oauth_device',
    );
    assert.deepEqual([copilot.providerId, copilot.credentialConfigured], ['github-copilot', true]);
    await page.locator(`tr[data-account="${copilot.id}"]`).waitFor();
    typedSecrets.push(token);
    await assertClean('gauge-setup');
  });

  test('Gauge set-up: a budget created, edited, refused inline, removed', async () => {
    const form = page.locator('form[data-form=budget]');
    await form.getByLabel('Name').fill('Team');
    await form.getByLabel('Amount (USD)').fill('50');
    await form.getByLabel('Period').selectOption('week');
    await form.getByLabel('Warn at').fill('50, 90');
    await form.locator('input[type=checkbox][value=fake]').check();
    await form.getByLabel('Amount (USD)').press('Enter');
    const budgets = async () => (await api('GET', '/v1/gauge/budgets')).data;
    const [budget] = await eventually(async () => {
      const list = await budgets();
      assert.equal(list.length, 1);
      return list;
    }, 'the budget is created');
    assert.deepEqual(
      [budget.name, budget.amount, budget.period, budget.basis, budget.thresholds, budget.scope.providerIds],
      ['Team', 50, 'week', 'estimated', [50, 90], ['fake']],
    );
    const row = page.locator(`tr[data-budget="${budget.id}"]`);
    await row.locator('button[data-action=edit]').click();
    assert.equal(await form.getAttribute('data-editing'), budget.id);
    assert.equal(await form.getByLabel('Name').inputValue(), 'Team');
    await form.getByLabel('Amount (USD)').fill('75');
    await form.getByLabel('Spend counted').selectOption('provider_reported');
    await form.getByLabel('Amount (USD)').press('Enter');
    await eventually(async () => assert.equal((await budgets())[0].amount, 75), 'the budget is changed');
    assert.deepEqual(
      [(await budgets())[0].id, (await budgets())[0].basis, (await budgets())[0].period],
      [budget.id, 'provider_reported', 'week'],
    );
    assert.equal(await form.getAttribute('data-editing'), '');

    // A threshold over 1000%: the API's 400 beside the form, nothing created.
    await form.getByLabel('Name').fill('Too much');
    await form.getByLabel('Amount (USD)').fill('10');
    await form.getByLabel('Warn at').fill('5000');
    expectedRefusals.push('400 /v1/gauge/budgets');
    await form.getByLabel('Amount (USD)').press('Enter');
    assert.match((await form.locator('[role=alert]').textContent())!, /threshold/i);
    assert.equal((await budgets()).length, 1);

    await row.locator('button[data-action=remove]').click();
    await page.keyboard.press('Enter');
    await eventually(async () => assert.equal((await budgets()).length, 0), 'the budget is removed');
    await row.waitFor({ state: 'detached' });
  });

  test('Gauge set-up: an alert rule created, edited, removed', async () => {
    const form = page.locator('form[data-form=alert-rule]');
    await form.getByLabel('Name').fill('OpenRouter low');
    await form.getByLabel('Alert when').selectOption('quota_low');
    await form.getByLabel('For', { exact: true }).selectOption('p:openrouter');
    await form.getByLabel('Threshold').fill('15');
    await form.getByLabel('Name').press('Enter');
    const rules = async () => (await api('GET', '/v1/gauge/alert-rules')).data;
    const [rule] = await eventually(async () => {
      const list = await rules();
      assert.equal(list.length, 1);
      return list;
    }, 'the rule is created');
    assert.deepEqual(
      [rule.name, rule.kind, rule.target, rule.threshold, rule.cooldownMinutes, rule.enabled],
      ['OpenRouter low', 'quota_low', { providerId: 'openrouter' }, 15, 60, true],
    );
    const row = page.locator(`tr[data-rule="${rule.id}"]`);
    await row.locator('button[data-action=edit]').click();
    assert.equal(await form.getByLabel('Alert when').isDisabled(), true, 'the kind is fixed');
    await form.getByLabel('Threshold').fill('10');
    await form.getByLabel('Quiet for').fill('5');
    await form.getByLabel('Enabled').uncheck();
    await form.getByLabel('Threshold').press('Enter');
    await eventually(async () => assert.equal((await rules())[0].threshold, 10), 'the rule is changed');
    const changed = (await rules())[0];
    assert.deepEqual([changed.id, changed.cooldownMinutes, changed.enabled], [rule.id, 5, false]);
    await eventually(async () => assert.equal(await row.getAttribute('data-enabled'), 'false'), 'shown disabled');
    await assertClean('gauge-setup');

    await row.locator('button[data-action=remove]').click();
    await page.keyboard.press('Enter');
    await eventually(async () => assert.equal((await rules()).length, 0), 'the rule is removed');
  });

  test('no console error but the refusals provoked on purpose, and no request left the service', () => {
    assert.deepEqual(consoleErrors, []);
    assert.deepEqual(refusals.sort(), expectedRefusals.sort());
    assert.deepEqual(foreignRequests, []);
  });
});
