import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { bytes } from '../../cli/output.ts';
import * as anthropicFake from '../fakes/anthropic.ts';
import { startOpenRouterGaugeFake, type OpenRouterGaugeFake } from '../fakes/gauge/openrouter.ts';
import * as openaiFake from '../fakes/openai.ts';
import { writeTinyModel } from '../helpers/gguf.ts';
import { rawRequest, tempHome, untilClosed } from '../helpers/service.ts';
import { callApi, emptyStateText, eventually, launchChromium } from '../helpers/dashboard-browser.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// W2.4: the dashboard in a real browser (Debian's Chromium through playwright-core) against the running service
// with the fakes behind it: sign in by pasting the admin token, each usage chart shows the numbers the API
// answers for the same range, an alert is delivered (browser notification) and acknowledged through the page,
// hiding a model takes it out of /v1/models. No console error, no request leaves the service's origin, and a
// screenshot of each view lands in test-output/dashboard/. Then the static routes themselves.

const SHOTS = new URL('../../test-output/dashboard/', import.meta.url);
const OPENAI_KEY = `fake-openai-dash-${process.pid}`;
const ANTHROPIC_KEY = `fake-anthropic-dash-${process.pid}`;
const OR_KEY = `sk-or-v1-dashboard-test-${process.pid}-0123456789abcdef0123456789abcdef`;
// What the Requests view shows of a logged call.
const PROMPT = `dashboard-prompt-${process.pid}`;
const ANSWER = `dashboard-answer-${process.pid}`;

let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let an: anthropicFake.AnthropicFake;
let gaugeFake: OpenRouterGaugeFake;
let browser: Browser;
let page: Page;
const consoleErrors: string[] = [];
const foreignRequests: string[] = [];

const chat = {
  model: 'openai/gpt-test',
  messages: [{ role: 'user', content: 'hi' }],
  tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
};
const message = { model: 'anthropic/claude-test', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };

const api = (method: string, path: string, body?: unknown) => callApi(svc, method, path, body);
const TINY = 'embedded/tiny.gguf';

async function shoot(name: string) {
  await page.screenshot({ path: new URL(`${name}.png`, SHOTS).pathname, fullPage: true });
}

async function openView(view: string) {
  await page.click(`nav a[data-view=${view}]`);
  await page.waitForSelector(`section.${view}[data-view-ready=true]`);
}

before(async () => {
  oa = await openaiFake.start({ apiKey: OPENAI_KEY });
  oa.setModels([{ id: 'gpt-test' }, { id: 'gpt-other' }]);
  oa.setOutput({ toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] });
  an = await anthropicFake.start({ apiKey: ANTHROPIC_KEY });
  an.setModels([{ id: 'claude-test' }]);
  gaugeFake = await startOpenRouterGaugeFake({
    apiKey: OR_KEY,
    managementKey: `sk-or-v1-management-unused-${process.pid}`,
  });
  // A tiny local model for the Runtime view's pin (W4.8); loaded by its test, not before.
  const home = tempHome();
  mkdirSync(join(home, 'models'), { recursive: true });
  writeTinyModel(join(home, 'models', 'tiny.gguf'));
  svc = await startInProcess({
    home,
    env: { SWITCHYARD_GAUGE_ALLOWED_HOSTS: 'loopback', SWITCHYARD_GAUGE_TIMEOUT_MS: '10000' },
  });
  await api('PATCH', '/v1/settings', { runtime: { tuning: { contextSize: 256, threads: 1, parallel: 1 } } });
  for (const [kind, fake, key] of [
    ['openai', oa, OPENAI_KEY],
    ['anthropic', an, ANTHROPIC_KEY],
  ] as const) {
    await api('POST', '/v1/providers', { kind, baseUrl: fake.baseUrl, credential: key });
    await api('POST', `/v1/providers/${kind}/actions/refresh-models`);
  }
  for (let i = 0; i < 3; i++) await api('POST', '/v1/chat/completions', chat);
  // One Smart Route call, so the routes chart has a row.
  await api('POST', '/v1/route-packs', {
    slug: 'pair',
    routes: [{ id: 'a', model: 'openai/gpt-test' }],
    fallback: { model: 'openai/gpt-other' },
  });
  await api('POST', '/v1/chat/completions', { ...chat, model: '@route/pair' });
  for (let i = 0; i < 2; i++)
    await svc.request('POST', '/v1/messages', { body: message, headers: { 'anthropic-version': '2023-06-01' } });
  await eventually(
    async () => assert.equal((await api('GET', '/v1/usage/summary')).totals.requests, 6),
    'the meter commits the six calls',
  );

  // Gauge: an OpenRouter account whose key has 5% left fires a quota_low alert; a budget to show beside it.
  await api('PATCH', '/v1/settings', { gauge: { enabled: true } });
  const account = await api('POST', '/v1/gauge/accounts', {
    providerId: 'openrouter',
    authMode: 'api_key',
    credential: OR_KEY,
    config: { baseUrl: gaugeFake.baseUrl },
  });
  await api('POST', '/v1/gauge/alert-rules', {
    name: 'Low',
    kind: 'quota_low',
    threshold: 10,
    target: { providerId: 'openrouter' },
    cooldownMinutes: 0,
  });
  gaugeFake.setKey({
    limit: 10,
    limit_remaining: 0.5,
    limit_reset: 'monthly',
    usage: 9.5,
    usage_daily: 0,
    usage_weekly: 0,
    usage_monthly: 9.5,
  });
  const refreshed = await api('POST', '/v1/gauge/refresh', { sourceIds: [account.id] });
  assert.equal(refreshed.data[0].ok, true, JSON.stringify(refreshed));
  await api('POST', '/v1/gauge/budgets', { name: 'Team', amount: 50, period: 'month', basis: 'estimated' });
  assert.equal((await api('GET', '/v1/gauge/alert-events')).data.length, 1);

  mkdirSync(SHOTS, { recursive: true });
  // A browser that cannot start fails the file: CI installs Chromium (.ci/run).
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.grantPermissions(['notifications'], { origin: svc.url });
  // Anything not for the service's origin is refused and counted: the page must work offline.
  await context.route('**', (route) => {
    const url = route.request().url();
    if (new URL(url).origin === svc.url || url.startsWith('data:')) return route.continue();
    foreignRequests.push(url);
    return route.abort();
  });
  page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (err) => consoleErrors.push(`pageerror: ${err.message}`));
});

after(async () => {
  await browser?.close();
  await svc?.stop();
  await oa?.close();
  await an?.close();
  await gaugeFake?.close();
});

describe('the dashboard in Chromium', () => {
  test('signs in by pasting the admin token, kept in sessionStorage and never in a URL', async () => {
    await page.goto(`${svc.url}/`);
    await page.fill('#token', svc.adminToken);
    await page.click('form[aria-label="Sign in with a token"] button[type=submit]');
    await page.waitForSelector('section.usage[data-view-ready=true]');
    assert.equal(await page.evaluate("sessionStorage.getItem('switchyard.token')"), svc.adminToken);
    assert.equal(page.url(), `${svc.url}/`, 'nothing added to the URL');
  });

  test('usage: each chart holds the numbers the API answers for the same range', async () => {
    const range = page.locator('.range-text');
    const from = (await range.getAttribute('data-from'))!;
    const to = (await range.getAttribute('data-to'))!;
    const q = (path: string, extra = '') => api('GET', `/v1/usage/${path}?from=${from}&to=${to}${extra}`);

    const summary = await q('summary');
    assert.equal(summary.totals.requests, 6);
    for (const key of ['requests', 'totalTokens', 'failedRequests'] as const) {
      assert.equal(
        await page.getAttribute(`[data-chart=summary] [data-key=${key}]`, 'data-value'),
        String(summary.totals[key]),
        key,
      );
    }
    assert.equal(
      await page.getAttribute('[data-chart=summary] [data-key=toolCalls]', 'data-value'),
      String(summary.toolCalls),
    );

    // Daily: one row per day of the range, the API's figures on its days and 0 on the days it omits.
    const daily = await q('daily');
    const rows = await page.$$eval('[data-chart=daily] tr[data-day]', (trs) =>
      trs.map((tr) => ({
        day: tr.getAttribute('data-day'),
        requests: Number(tr.getAttribute('data-requests')),
        totalTokens: Number(tr.getAttribute('data-totaltokens')),
      })),
    );
    assert.equal(rows.length, 30);
    assert.equal(rows[0]!.day, from);
    assert.equal(rows.at(-1)!.day, to);
    const byDay = new Map<string, { requests: number; totalTokens: number }>(
      daily.data.map((d: { day: string; requests: number; totalTokens: number }) => [d.day, d]),
    );
    assert.ok(byDay.size >= 1);
    for (const row of rows) {
      const d = byDay.get(row.day!);
      assert.deepEqual(row, { day: row.day, requests: d?.requests ?? 0, totalTokens: d?.totalTokens ?? 0 });
    }
    assert.equal(await page.locator('[data-chart=daily] canvas').count(), 1, 'uPlot drew the chart');

    const bars = (name: string, columns: string[]) =>
      page.$$eval(
        `[data-chart=${name}] tr[data-key]`,
        (trs, cols) =>
          trs.map((tr) => [
            tr.getAttribute('data-key'),
            ...cols.map((c) => tr.getAttribute(`data-${c.toLowerCase()}`)),
          ]),
        columns,
      );
    const expect = (data: Record<string, unknown>[], key: (r: any) => string, columns: string[]) =>
      data.map((r) => [key(r), ...columns.map((c) => String(r[c] ?? ''))]);
    const tokenColumns = ['totalTokens', 'requests', 'costUsd'];
    for (const [name, groupBy, key] of [
      ['by-provider', 'provider', (r: any) => r.providerId],
      ['by-model', 'model', (r: any) => r.modelId],
      ['by-token', 'token', (r: any) => r.tokenId],
    ] as const) {
      const answer = await q('breakdown', `&groupBy=${groupBy}`);
      assert.ok(answer.data.length >= 1, name);
      assert.deepEqual(await bars(name, tokenColumns), expect(answer.data, key, tokenColumns), name);
    }
    // By token: the row says the token's name (the admin token signed in reads them); data-key keeps the ID.
    const names = new Map((await api('GET', '/v1/tokens')).data.map((t: any) => [t.id, t.name]));
    const labels = await page.$$eval('[data-chart=by-token] tr[data-key]', (trs) =>
      trs.map((tr) => [tr.getAttribute('data-key'), tr.querySelector('.text')!.textContent]),
    );
    assert.ok(labels.length >= 1);
    for (const [id, label] of labels) assert.equal(label, names.get(id!) ?? `${id} (revoked)`);
    assert.ok(
      labels.some(([, label]) => label === 'bootstrap admin'),
      JSON.stringify(labels),
    );
    const tools = await q('tools');
    assert.deepEqual(
      await bars('tools', ['calls']),
      expect(tools.data, (r) => r.name, ['calls']),
    );
    assert.equal(tools.data[0].name, 'lookup');
    const routes = await q('routes');
    assert.equal(routes.data.length, 1);
    assert.deepEqual(
      await bars('routes', ['requests', 'totalTokens']),
      expect(routes.data, (r) => `@route/${r.packSlug} ${r.routeId}`, ['requests', 'totalTokens']),
    );
    const acceleration = await q('acceleration');
    assert.deepEqual(
      await bars('acceleration', ['outputTokens']),
      expect(acceleration.data, (r) => `${r.modelId ?? '?'} ${r.mode}${r.draftModelId ? ` (${r.draftModelId})` : ''}`, [
        'outputTokens',
      ]),
    );
    await shoot('usage');
  });

  test('Gauge: readings per account; an alert is delivered as a notification, then acknowledged', async () => {
    await openView('gauge');
    const [event] = (await api('GET', '/v1/gauge/alert-events')).data;
    // The page shows a pending firing alert as a browser notification (permission granted) and records it.
    await eventually(
      async () => assert.equal((await api('GET', '/v1/gauge/alert-events')).data[0].delivery, 'delivered'),
      'delivery recorded',
    );
    const row = page.locator(`tr[data-alert="${event.id}"]`);
    await eventually(
      async () => assert.equal(await row.getAttribute('data-delivery'), 'delivered'),
      'the page shows the delivery',
    );
    await row.locator('button[data-action=acknowledge]').click();
    await eventually(
      async () => assert.equal(await row.getAttribute('data-state'), 'acknowledged'),
      'the page shows the acknowledgement',
    );
    const after = (await api('GET', '/v1/gauge/alert-events')).data[0];
    assert.deepEqual([after.id, after.state, after.delivery], [event.id, 'acknowledged', 'delivered']);
    assert.ok(after.acknowledgedAt && after.deliveredAt);

    const reading = (await api('GET', '/v1/gauge/readings?providerId=openrouter')).data[0];
    const card = page.locator(`[data-account="${reading.accountId}"]`);
    for (const w of reading.windows.filter((w: { limit: number | null }) => w.limit)) {
      const shown = Number(await card.locator(`tr[data-window="${w.id}"]`).getAttribute('data-utilization'));
      assert.ok(Math.abs(shown - (w.utilization ?? w.used / w.limit)) < 1e-9, w.id);
    }
    // A window without a limit (nor a share) says so beside its figure, rather than drawing an empty bar.
    for (const w of reading.windows.filter((w: any) => !w.limit && w.utilization == null)) {
      const row = card.locator(`tr[data-window="${w.id}"]`);
      assert.equal(await row.locator('.meter').count(), 0, w.id);
      assert.equal(await row.locator('[data-no-limit]').textContent(), 'no limit');
    }
    const [budget] = (await api('GET', '/v1/gauge/budgets')).data;
    assert.equal(await page.getAttribute(`[data-budget="${budget.id}"]`, 'data-amount'), String(budget.amount));
    await shoot('gauge');
  });

  test('providers and models: hiding a model takes it out of /v1/models; aliases are written', async () => {
    await openView('models');
    const listed = async () => (await api('GET', '/v1/models')).data.map((m: { id: string }) => m.id);
    assert.ok((await listed()).includes('openai/gpt-other'));
    const row = page.locator('tr[data-model="openai/gpt-other"]');
    // Families in words; their IDs in the cell's title.
    const families = row.locator('td.small').first();
    assert.match((await families.textContent())!, /OpenAI-style chat completions/);
    assert.doesNotMatch((await families.textContent())!, /style[AB]/);
    assert.match((await families.getAttribute('title'))!, /styleA\.chat_completions/);
    await row.locator('input[data-action=hide]').check();
    await eventually(
      async () => assert.equal(await row.getAttribute('data-hidden'), 'true'),
      'the page shows it hidden',
    );
    assert.ok(!(await listed()).includes('openai/gpt-other'));
    assert.equal((await api('GET', `/v1/catalog/models/${encodeURIComponent('openai/gpt-other')}`)).hidden, true);

    const test = page.locator('tr[data-model="openai/gpt-test"]');
    await test.locator('input[data-action=aliases]').fill('fast, cheap');
    await test.locator('input[data-action=aliases]').press('Enter');
    await eventually(
      async () =>
        assert.deepEqual((await api('GET', `/v1/catalog/models/${encodeURIComponent('openai/gpt-test')}`)).aliases, [
          'fast',
          'cheap',
        ]),
      'aliases saved',
    );
    assert.equal(await page.getAttribute('tr[data-provider=openai]', 'data-enabled'), 'true');
    await shoot('models');
  });

  test('runtime and hardware: the probe the API answers', async () => {
    await api('POST', `/v1/catalog/models/${encodeURIComponent(TINY)}/actions/load`);
    await eventually(
      async () => assert.equal((await api('GET', '/v1/runtime/loaded')).data.length, 1),
      'the tiny model loads',
    );
    await openView('hardware');
    const hw = await api('GET', '/v1/hardware/telemetry');
    assert.equal(
      await page.getAttribute('[data-chart=hardware] [data-cores]', 'data-cores'),
      String(hw.cpu.logicalCores ?? ''),
    );
    assert.equal((await api('GET', '/v1/runtime/loaded')).data.length, await page.locator('tr[data-loaded]').count());
    const services = (await api('GET', '/v1/services')).data.map((s: { id: string; state: string }) => [s.id, s.state]);
    const shown = await page.$$eval('tr[data-service]', (trs) =>
      trs.map((tr) => [tr.getAttribute('data-service'), tr.getAttribute('data-state')]),
    );
    assert.deepEqual(shown, services);
    assert.deepEqual(services[0], ['embedded', 'running']);
    await shoot('hardware');
  });

  test('runtime: each loaded model says what keeps it warm; Pin pins it; the budget line', async () => {
    const row = page.locator(`tr[data-loaded="${TINY}"]`);
    const resident = async () => (await api('GET', `/v1/runtime/residency/${encodeURIComponent(TINY)}`)).resident;
    // Loaded by an action, without a session: cold.
    assert.deepEqual((await resident()).warm, []);
    assert.equal(await row.locator('[data-warm]').textContent(), 'cold');
    const { memory } = await api('GET', '/v1/runtime/loaded');
    const budget = page.locator('[data-budget-held]');
    assert.deepEqual(
      [await budget.getAttribute('data-budget-held'), await budget.getAttribute('data-budget-bytes')],
      [String(memory.heldBytes), String(memory.budgetBytes)],
    );
    assert.equal(
      (await budget.textContent())!.replace(/\s+/g, ' ').trim(),
      `Memory budget: held ${bytes(memory.heldBytes)} of ${bytes(memory.budgetBytes)} (${memory.budgetSource})`,
    );
    await row.locator('button[data-action=pin]').click();
    await eventually(async () => assert.equal((await resident()).pinned, true), 'the API reports the pin');
    await eventually(
      async () => assert.equal(await row.locator('[data-warm]').textContent(), 'pinned'),
      'the page shows the warm reason',
    );
    assert.equal(await row.getAttribute('data-pinned'), 'true');
    assert.equal(await row.locator('button[data-action=pin]').textContent(), 'Unpin');
    await shoot('runtime-pinned');
    await row.locator('button[data-action=pin]').click();
    await eventually(async () => assert.equal((await resident()).pinned, false), 'the API reports the unpin');
    await eventually(
      async () => assert.equal(await row.locator('button[data-action=pin]').textContent(), 'Pin'),
      'the page offers the pin again',
    );
  });

  test('requests: each session a timeline of its calls; a click shows both bodies; no secret in the page', async () => {
    await api('PATCH', '/v1/settings', { requestLog: { enabled: true } });
    await openView('requests');
    assert.match(await emptyStateText(page, 'requests'), /^ ?No requests logged\. .* requestLog\.enabled or /);
    oa.setOutput({ toolCalls: 'none', text: ANSWER });
    // Two calls in one session, then one in another: the list answers newest first.
    const calls: { session: string; prompt: string; id: string }[] = [];
    for (const [session, n] of [
      ['sess-one', 1],
      ['sess-one', 2],
      ['sess-two', 3],
    ] as const) {
      const prompt = `${PROMPT} ${n}`;
      const reply = await svc.request('POST', '/v1/chat/completions', {
        body: { model: 'openai/gpt-test', messages: [{ role: 'user', content: prompt }] },
        headers: { 'x-switchyard-session': session },
      });
      assert.equal(reply.status, 200, reply.text);
      calls.push({ session, prompt, id: reply.headers['x-request-id']! });
    }
    await eventually(
      async () => assert.equal((await api('GET', '/v1/requests')).data.length, 3),
      'the log commits the three calls',
    );

    await page.click('form.request-filters button[type=submit]');
    await page.waitForSelector('.timeline');
    // Sessions by their newest call, newest first; each session's calls oldest first (view-requests.js).
    const timelines = await page.$$eval('.timeline', (els) =>
      els.map((el) => ({
        session: el.getAttribute('data-session'),
        calls: [...el.querySelectorAll('[data-request]')].map((row) => row.getAttribute('data-request')),
      })),
    );
    assert.deepEqual(timelines, [
      { session: 'sess-two', calls: [calls[2]!.id] },
      { session: 'sess-one', calls: [calls[0]!.id, calls[1]!.id] },
    ]);
    const heading = (session: string) => page.locator(`.timeline[data-session=${session}] h3`).textContent();
    assert.match((await heading('sess-one'))!, /^sess-one 2 calls, [\d,]+ ms$/);
    assert.match((await heading('sess-two'))!, /^sess-two 1 call, [\d,]+ ms$/);

    await page.click(`.timeline [data-request="${calls[1]!.id}"]`);
    const detail = page.locator(`[data-request-detail="${calls[1]!.id}"]`);
    await detail.waitFor();
    assert.match(
      (await detail.locator('.request-summary').textContent())!,
      /^POST \/v1\/chat\/completions \(chat\.completions\): openai\/gpt-test to openai\/gpt-test on openai; ok, 200;/,
    );
    const bodies = detail.locator('pre.body');
    assert.equal(await bodies.count(), 2);
    const [request, response] = [JSON.parse((await bodies.nth(0).textContent())!), await bodies.nth(1).textContent()];
    assert.deepEqual(request.messages, [{ role: 'user', content: calls[1]!.prompt }]);
    assert.equal(JSON.parse(response!).choices[0].message.content, ANSWER);
    // The headers the client sent, without its token.
    assert.equal(await detail.locator('dt:text-is("x-switchyard-session") + dd').textContent(), 'sess-one');
    assert.equal(await detail.locator('dt:text-is("authorization")').count(), 0);
    await shoot('requests');

    const content = await page.content();
    for (const secret of [svc.adminToken, OPENAI_KEY, ANTHROPIC_KEY, OR_KEY])
      assert.ok(!content.includes(secret), 'a provider key or a local token is in the page');
    await detail.locator('button:has-text("Close")').click();
    await detail.waitFor({ state: 'detached' });

    // The search: one session's calls only.
    await page.fill('form.request-filters input[name=session]', 'sess-one');
    await page.click('form.request-filters button[type=submit]');
    await page.locator('.timeline[data-session=sess-two]').waitFor({ state: 'detached' });
    assert.equal(await page.locator('.timeline[data-session=sess-one] [data-request]').count(), 2);
    await api('PATCH', '/v1/settings', { requestLog: { enabled: false } });
    // Back where the runtime tests left the page: the next test signs in again there with a read and manage token,
    // which may not read the log (admin only), nor the token names Usage asks for.
    await openView('hardware');
  });

  test('signs out, then in again by pairing: an admin approves the code the page shows', async () => {
    await page.click('header button:has-text("Sign out")');
    assert.equal(await page.evaluate("sessionStorage.getItem('switchyard.token')"), null);
    await page.click('button:has-text("Pair this browser")');
    const code = page.locator('.pairing .code');
    await eventually(
      async () => assert.match((await code.textContent()) ?? '', /^[0-9A-Z]{4}-[0-9A-Z]{4}$/),
      'the page shows the code',
    );
    const userCode = await code.textContent();
    const [pending] = (await api('GET', '/v1/pairing/requests')).data;
    assert.deepEqual(
      [pending.userCode, pending.clientName, pending.scopes],
      [userCode, 'Switchyard dashboard', ['read', 'manage']],
    );
    const approved = await api('POST', `/v1/pairing/requests/${pending.id}/approve`, {});
    await page.waitForSelector('main[data-current-view] section[data-view-ready=true]');
    const secret = String(await page.evaluate("sessionStorage.getItem('switchyard.token')"));
    assert.notEqual(secret, svc.adminToken);
    const reply = await svc.request('GET', '/v1/settings', { token: secret });
    assert.equal(reply.status, 200, 'the paired token reads');
    assert.deepEqual(approved.token.scopes, ['read', 'manage']);
  });

  test('no console error, and no request left the service', () => {
    assert.deepEqual(consoleErrors, []);
    assert.deepEqual(foreignRequests, []);
  });
});

describe('the static routes', () => {
  const get = (path: string, options: Parameters<typeof rawRequest>[3] = {}) =>
    rawRequest(svc.port, 'GET', path, { token: null, ...options });

  test('the page and its files need no token, carry the CSP and nosniff, with their content types', async () => {
    for (const [path, type] of [
      ['/', 'text/html'],
      ['/dashboard/app.js', 'text/javascript'],
      ['/dashboard/preact.js', 'text/javascript'],
      ['/dashboard/uplot.css', 'text/css'],
    ] as const) {
      const reply = await get(path);
      assert.equal(reply.status, 200, path);
      assert.ok(reply.headers['content-type']!.startsWith(type), `${path}: ${reply.headers['content-type']}`);
      assert.match(
        reply.headers['content-security-policy']!,
        /^default-src 'self'; script-src 'self'; style-src 'self';.* frame-ancestors 'none'/,
      );
      assert.equal(reply.headers['x-content-type-options'], 'nosniff');
    }
    assert.match((await get('/')).text, /<script type="module" src="\/dashboard\/app\.js"><\/script>/);
    assert.ok(!/<script>/.test((await get('/')).text), 'no inline script');
  });

  test('the API still needs a token', async () => {
    const reply = await get('/v1/usage/summary');
    assert.equal(reply.status, 401);
  });

  test('unknown files and traversal attempts are 404 with the error envelope', async () => {
    for (const path of [
      '/dashboard/nope.js',
      '/dashboard/../package.json',
      '/dashboard/..%2Fpackage.json',
      '/dashboard/%2e%2e%2fpackage.json',
      '/dashboard/..%5Cpackage.json',
      '/dashboard/%2e%2e/package.json',
      '/dashboard/',
      '/dashboard/a/app.js',
      '/dashboard/app.js%00',
      '/index.html',
      '/dashboard/APP.JS',
    ]) {
      const reply = await get(path);
      assert.equal(reply.status, 404, path);
      assert.equal(reply.json.error.code, 'NOT_FOUND', path);
      assert.ok(!reply.text.includes('"name"'), path);
    }
    const bad = await get('/dashboard/%zz');
    assert.equal(bad.status, 400);
  });

  test('HEAD answers wherever GET does, with its headers and no body; POST is a 405 listing both', async () => {
    // Raw, to see every byte: a HEAD answer carries no body (Node's client would take one for the next response).
    // Claude Code sends an unauthenticated `HEAD /` to its base URL at every start.
    for (const path of ['/', '/dashboard/app.js', '/health']) {
      const got = await get(path);
      const text = await untilClosed(svc.port, `HEAD ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      assert.match(text, /^HTTP\/1\.1 200 /, path);
      assert.equal(text.slice(text.indexOf('\r\n\r\n') + 4), '', path);
      const reply = await rawRequest(svc.port, 'HEAD', path, { token: null });
      assert.deepEqual([reply.status, reply.text], [200, ''], path);
      assert.equal(reply.headers['content-type'], got.headers['content-type'], path);
      assert.equal(reply.headers['content-security-policy'], got.headers['content-security-policy'], path);
    }
    // A route that needs a token needs it for HEAD too; a streamed GET answers its head and ends.
    assert.equal((await rawRequest(svc.port, 'HEAD', '/v1/models', { token: null })).status, 401);
    const models = await rawRequest(svc.port, 'HEAD', '/v1/models', { token: svc.adminToken });
    assert.deepEqual([models.status, models.text], [200, ''], 'HEAD /v1/models');
    const events = await untilClosed(
      svc.port,
      `HEAD /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${svc.adminToken}\r\nConnection: ` +
        `close\r\n\r\n`,
    );
    assert.match(events, /^HTTP\/1\.1 200 /);
    assert.match(events, /\r\ncontent-type: text\/event-stream/i);
    assert.equal(events.slice(events.indexOf('\r\n\r\n') + 4).replace(/^0\r\n\r\n$/, ''), '');
    for (const method of ['POST', 'DELETE']) {
      for (const path of ['/', '/dashboard/app.js']) {
        const reply = await rawRequest(svc.port, method, path, { token: null });
        assert.equal(reply.status, 405, `${method} ${path}`);
        assert.equal(reply.headers['allow'], 'GET, HEAD');
      }
    }
    const query = await get('/?token=x');
    assert.equal(query.status, 400);
    assert.equal(query.json.error.param, 'token');
  });

  test(
    'the Host check and CORS apply: a rebinding host is refused, a foreign origin gets no CORS ' + 'headers',
    async () => {
      const rebound = await get('/', { headers: { host: 'evil.example:3939' } });
      assert.equal(rebound.status, 403);
      assert.ok(!rebound.text.includes('<html'));
      const foreign = await get('/dashboard/app.js', { headers: { origin: 'http://evil.example' } });
      assert.equal(foreign.status, 200);
      assert.equal(foreign.headers['access-control-allow-origin'], undefined);
      const preflight = await rawRequest(svc.port, 'OPTIONS', '/', {
        token: null,
        headers: { origin: 'http://evil.example', 'access-control-request-method': 'GET' },
      });
      assert.equal(preflight.status, 403);
      await api('PATCH', '/v1/settings', { cors: { allowedOrigins: ['http://allowed.example'] } });
      const allowed = await get('/', { headers: { origin: 'http://allowed.example' } });
      assert.equal(allowed.headers['access-control-allow-origin'], 'http://allowed.example');
      await api('PATCH', '/v1/settings', { cors: { allowedOrigins: [] } });
    },
  );
});
