import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { ServiceHandle } from './service.ts';

// The dashboard's set-up forms in Chromium (Debian's, through playwright-core), as the dashboard-forms and
// dashboard-gauge-setup tests drive them: one browser per file, 800 px wide, every request to another origin
// refused and counted, console errors collected. Chromium logs each 4xx answer as a console error; the API's
// refusals a test provokes on purpose (to see them shown inline) are counted apart and must be exactly those the
// test expected.

const CHROMIUM = process.env.SWITCHYARD_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = new URL('../../test-output/dashboard/', import.meta.url);

export interface DashboardBrowser {
  page: Page;
  consoleErrors: string[];
  foreignRequests: string[];
  /** `409 /v1/providers`: the 4xx answers the page got. */
  refusals: string[];
  /** What the tests provoked on purpose; compared with `refusals` at the end. */
  expectedRefusals: string[];
  /** Every secret typed into a form: none may be found in the page afterwards (see assertClean). */
  typedSecrets: string[];
  /** Pastes the admin token on the sign-in form. */
  signIn(): Promise<void>;
  openView(view: string): Promise<void>;
  /** The page's text, its fields and its storage hold no typed secret; nothing is wider than 800 px; a screenshot. */
  assertClean(view: string): Promise<void>;
  close(): Promise<void>;
}

/** Debian's Chromium, headless, with none of its own traffic (updates, sync, background requests). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
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
}

/** A call the test makes through the API (to set up, or to check a form's effect): it must succeed. */
export async function callApi(svc: ServiceHandle, method: string, path: string, body?: unknown) {
  const reply = await svc.request(method, path, body === undefined ? {} : { body });
  assert.ok(reply.status < 300, `${method} ${path}: ${reply.status} ${reply.text}`);
  return reply.json;
}

/** An empty state's text, its line breaks as spaces. */
export const emptyStateText = async (page: Page, what: string) =>
  ((await page.textContent(`[data-empty=${what}]`)) ?? '').replace(/\s+/g, ' ');

export async function openDashboard(svc: ServiceHandle): Promise<DashboardBrowser> {
  mkdirSync(SHOTS, { recursive: true });
  const browser = await launchChromium();
  // 800 px wide for the whole file: every view must read at that width.
  const context = await browser.newContext({ viewport: { width: 800, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svc.url });
  const b = {
    consoleErrors: [] as string[],
    foreignRequests: [] as string[],
    refusals: [] as string[],
    expectedRefusals: [] as string[],
    typedSecrets: [] as string[],
  };
  await context.route('**', (route) => {
    const url = route.request().url();
    if (new URL(url).origin === svc.url || url.startsWith('data:')) return route.continue();
    b.foreignRequests.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const refused = /^Failed to load resource: the server responded with a status of (4\d\d)/.exec(m.text());
    if (refused) b.refusals.push(`${refused[1]} ${new URL(m.location().url).pathname}`);
    else b.consoleErrors.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (err) => b.consoleErrors.push(`pageerror: ${err.message}`));

  return {
    ...b,
    page,
    async signIn() {
      await page.goto(`${svc.url}/`);
      await page.fill('#token', svc.adminToken);
      await page.press('#token', 'Enter');
      await page.waitForSelector('section.usage[data-view-ready=true]');
    },
    async openView(view) {
      await page.click(`nav a[data-view=${view}]`);
      await page.waitForSelector(`section.${view}[data-view-ready=true]`);
    },
    async assertClean(view) {
      // A string, evaluated in the page (the tests are not compiled against the DOM's types).
      const shown = (await page.evaluate(`({
        html: document.documentElement.outerHTML,
        values: [...document.querySelectorAll('input, textarea')].map((e) => e.value),
        stored: JSON.stringify({ ...sessionStorage, ...localStorage }),
        width: document.documentElement.scrollWidth,
      })`)) as { html: string; values: string[]; stored: string; width: number };
      for (const secret of b.typedSecrets) {
        assert.ok(!shown.html.includes(secret), `${view}: a typed secret is in the page`);
        assert.ok(!shown.values.some((v) => v.includes(secret)), `${view}: a typed secret is in a field`);
        assert.ok(!shown.stored.includes(secret), `${view}: a typed secret is in the browser's storage`);
      }
      assert.ok(shown.width <= 800, `${view}: the page is ${shown.width} px wide`);
      await page.screenshot({ path: new URL(`forms-${view}.png`, SHOTS).pathname, fullPage: true });
    },
    close: () => browser.close(),
  };
}

/** Waits until `check` passes (the page re-renders after its own calls), then returns its value. */
export async function eventually<T>(check: () => Promise<T>, what: string, ms = 10_000): Promise<T> {
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
