import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { startOAuthDeviceFake, type OAuthDeviceFake } from '../fakes/gauge/oauth-device.ts';
import {
  callApi,
  emptyStateText,
  openDashboard,
  eventually,
  type DashboardBrowser,
} from '../helpers/dashboard-browser.ts';
import { writeTinyModel } from '../helpers/gguf.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';
import { tempHome } from '../helpers/service.ts';

// W3.3 item 2, continued from dashboard-forms.test.ts with the same harness: the Gauge set-up view (Gauge on,
// an account connected with its key and one by the device flow, sources switched, budgets and alert rules
// created, edited and removed) and the services view (a llama-server added, stopped, started, removed, with the
// fake llama-server of test/fakes on the service's PATH). Each effect is read back through the API.

const OR_KEY = `sk-or-v1-forms-test-${process.pid}-0123456789abcdef0123456789abcdef`;
const CLIENT_ID = 'Iv1.dashboardforms';
const FAKES = fileURLToPath(new URL('../fakes/llama-server/', import.meta.url));
let oauth: OAuthDeviceFake;

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
  oauth = await startOAuthDeviceFake({ clientId: CLIENT_ID });
  const home = tempHome();
  mkdirSync(join(home, 'models'));
  writeTinyModel(join(home, 'models', 'tiny.gguf'));
  svc = await startInProcess({
    home,
    env: {
      // One protocol second of the device flow lasts 20 ms, so GitHub's 5 s poll interval is 0.1 s.
      SWITCHYARD_GAUGE_AUTH_SECOND_MS: '20',
      PATH: `${FAKES}${delimiter}${process.env.PATH ?? ''}`,
      SWITCHYARD_SERVICE_TIMING: JSON.stringify({ healthEveryMs: 100, stopGraceMs: 300 }),
    },
  });
  // A provider record for a budget to count (no upstream is called).
  await api('POST', '/v1/providers', { kind: 'openai_compatible', id: 'fake', baseUrl: 'http://127.0.0.1:9/v1' });
  b = await openDashboard(svc);
  ({ page, expectedRefusals, typedSecrets } = b);
});

after(async () => {
  await b?.close();
  await svc?.stop();
  await oauth?.close();
});

describe('the dashboard set-up forms, 800 px wide: Gauge set-up and services', () => {
  test('signs in with the admin token', () => b.signIn());

  test('Gauge set-up: turn on, connect an account with its key, switch sources and the account', async () => {
    await openView('gauge-setup');
    for (const empty of ['accounts', 'budgets', 'rules']) assert.match(await emptyState(empty), /below/, empty);
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
    await eventually(async () => assert.equal(await form.getAttribute('data-editing'), ''), 'the form is empty again');

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

  test('services: a llama-server added for a library file, stopped, started, a taken ID inline, removed', async () => {
    await openView('services');
    assert.match(await emptyState('services'), /No llama-server runs/);
    const form = page.locator('form[data-form=add-service]');
    assert.equal(await form.getByLabel('Model file').inputValue(), 'tiny.gguf');
    await form.getByLabel('ID').fill('local');
    await form.getByLabel('ID').press('Enter');
    const row = page.locator('tr[data-service=local]');
    await row.waitFor();
    const service = await api('GET', '/v1/services/local');
    assert.deepEqual([service.kind, service.model, service.desired], ['llamacpp', 'tiny.gguf', 'running']);
    const shown = (state: string) =>
      eventually(async () => assert.equal(await row.getAttribute('data-state'), state), `shown ${state}`, 20_000);
    await shown('running');

    await row.locator('button[data-action=stop]').click();
    await shown('stopped');
    assert.equal((await api('GET', '/v1/services/local')).state, 'stopped');
    await row.locator('button[data-action=start]').click();
    await shown('running');
    assert.equal((await api('GET', '/v1/services/local')).state, 'running');

    await form.getByLabel('ID').fill('local');
    expectedRefusals.push('409 /v1/services');
    await form.getByRole('button', { name: 'Add service' }).click();
    assert.match((await form.locator('[role=alert]').textContent())!, /local/);
    assert.equal((await api('GET', '/v1/services')).data.length, 2);
    await assertClean('services');

    await row.locator('button[data-action=remove]').click();
    await page.keyboard.press('Enter');
    await eventually(async () => assert.equal(await row.count(), 0), 'the row goes');
    assert.equal((await svc.request('GET', '/v1/services/local')).status, 404);
  });

  test('no console error but the refusals provoked on purpose, and no request left the service', () => {
    assert.deepEqual(b.consoleErrors, []);
    assert.deepEqual(b.refusals.sort(), b.expectedRefusals.sort());
    assert.deepEqual(b.foreignRequests, []);
  });
});
