import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { createApp } from '../../../edge/http/app.ts';
import { corsPolicy } from '../../../edge/http/cors.ts';
import { CSP, dashboardRoutes, loadDashboardAssets, PAGE_FILES } from '../../../edge/routes/dashboard.ts';

// The dashboard's static routes in-process: what is served is exactly the fixed list, every module the page
// imports is in it, and nothing points off the machine.

const DIR = new URL('../../../dashboard/', import.meta.url);
const assets = loadDashboardAssets();
const app = createApp({
  routes: dashboardRoutes(assets),
  log: pino({ level: 'silent' }, new Writable({ write: (_c, _e, done) => done() })),
  authenticate: () => ({ ok: false, reason: 'unknown' }),
  cors: () => corsPolicy([]),
  multipartBodyLimit: () => 1024,
  jsonBodyLimit: () => 1024,
  listener: { host: '127.0.0.1', networkExposed: false },
  isDraining: () => false,
});
const get = (path: string, query = '') =>
  app.handle({ method: 'GET', path, query, headers: { host: '127.0.0.1:3939' }, body: null, peer: '127.0.0.1' });

describe('dashboard routes', () => {
  it('serve every file of dashboard/ and the three libraries, byte for byte, and nothing else', async () => {
    assert.deepEqual([...PAGE_FILES].sort(), readdirSync(DIR).sort(), 'PAGE_FILES lists the folder');
    assert.deepEqual([...assets.keys()].sort(), [...PAGE_FILES, 'preact.js', 'htm.js', 'uplot.js', 'uplot.css'].sort());
    for (const name of PAGE_FILES) {
      const reply = await get(`/dashboard/${name}`);
      assert.equal(reply.status, 200, name);
      assert.ok(Buffer.from(reply.body as Uint8Array).equals(readFileSync(new URL(name, DIR))), name);
      assert.equal(reply.headers['content-security-policy'], CSP);
      assert.equal(reply.headers['x-content-type-options'], 'nosniff');
    }
    const index = await get('/');
    assert.equal(index.headers['content-type'], 'text/html; charset=utf-8');
    assert.ok(Buffer.from(index.body as Uint8Array).equals(assets.get('index.html')!.body));
  });

  it('every module the page imports and every file index.html names is served', () => {
    const wanted = new Set<string>();
    for (const name of PAGE_FILES.filter((n) => n.endsWith('.js'))) {
      const text = assets.get(name)!.body.toString('utf8');
      for (const m of text.matchAll(/\bfrom '([^']+)'/g)) wanted.add(m[1]!);
    }
    for (const m of assets
      .get('index.html')!
      .body.toString('utf8')
      .matchAll(/(?:src|href)="([^"]+)"/g))
      wanted.add(m[1]!);
    assert.ok(wanted.size > 10);
    for (const ref of wanted) {
      if (ref === 'data:,') continue;
      const name = ref.replace(/^\.\//, '').replace(/^\/dashboard\//, '');
      assert.ok(assets.has(name), `${ref} is not served`);
    }
  });

  it('no served file refers to another host (the page works offline) or carries an inline script', () => {
    for (const [name, asset] of assets) {
      if (name === 'uplot.js' || name === 'preact.js') continue; // comments and SVG namespaces, never fetched
      assert.doesNotMatch(asset.body.toString('utf8'), /https?:\/\//, name);
    }
    assert.doesNotMatch(assets.get('index.html')!.body.toString('utf8'), /<script(?![^>]*\bsrc=)|\son\w+=|style=/i);
  });

  it('unknown names are 404 naming the file; queries are 400', async () => {
    for (const name of ['nope.js', '..%2Fpackage.json', 'index.htm', '.%2Fapp.js', 'app.js%20']) {
      const reply = await get(`/dashboard/${name}`);
      assert.equal(reply.status, 404, name);
      assert.equal(JSON.parse(String(reply.body)).error.param, 'file');
    }
    assert.equal((await get('/dashboard/app.js', 'v=1')).status, 400);
  });
});
