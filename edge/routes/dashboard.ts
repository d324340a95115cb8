import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ServiceError } from '../../protocol/errors.ts';
import { readQuery } from '../../protocol/query.ts';
import { route, type RouteDef, type RouteResult } from '../http/router.ts';

// The dashboard: a few static files served at `/` and `/dashboard/<name>`, public like /health (the page holds
// no data; every figure it shows comes from the token-guarded API). Only the names listed here exist, read
// once at start, so no request path ever reaches the file system.

/** Beside the compiled module (dist/dashboard, copied by bin/build.js) or the source's `dashboard/`. */
const PAGE_DIR = fileURLToPath(new URL('../../dashboard/', import.meta.url));

export const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  'frame-ancestors ' +
  "'none'; base-uri 'none'; form-action 'none'";

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
} as const;

/** The page's own files, by the name they are served under. */
export const PAGE_FILES = [
  'index.html',
  'app.js',
  'api.js',
  'chart.js',
  'format.js',
  'sign-in.js',
  'view-usage.js',
  'view-gauge.js',
  'view-models.js',
  'view-hardware.js',
  'view-providers.js',
  'view-tokens.js',
  'view-gauge-setup.js',
  'gauge-money-forms.js',
  'view-services.js',
  'view-limits.js',
  'view-requests.js',
  'forms.js',
  'models-setup.js',
  'provider-keys.js',
  'style.css',
] as const;

/** Browser builds of the three libraries, found where Node resolves each package (no CDN: the page works offline). */
function vendorFiles(): Record<string, string> {
  const require = createRequire(import.meta.url);
  const dirOf = (pkg: string) => dirname(require.resolve(pkg));
  return {
    'preact.js': join(dirOf('preact'), 'preact.mjs'),
    'htm.js': join(dirOf('htm'), 'htm.module.js'),
    'uplot.js': join(dirOf('uplot'), 'uPlot.esm.js'),
    'uplot.css': join(dirOf('uplot'), 'uPlot.min.css'),
  };
}

interface Asset {
  body: Buffer;
  type: string;
}

function typeOf(name: string): string {
  const ext = name.slice(name.lastIndexOf('.')) as keyof typeof TYPES;
  return TYPES[ext];
}

/** Reads every file once; a missing one stops the start, since the page would be broken. */
export function loadDashboardAssets(dir = PAGE_DIR): ReadonlyMap<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of PAGE_FILES) assets.set(name, { body: readFileSync(join(dir, name)), type: typeOf(name) });
  for (const [name, path] of Object.entries(vendorFiles()))
    assets.set(name, { body: readFileSync(path), type: typeOf(name) });
  return assets;
}

function answer(asset: Asset): RouteResult {
  // A fresh header object per answer: the edge adds its own headers to it.
  return {
    raw: asset.body,
    headers: {
      'content-type': asset.type,
      'content-security-policy': CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      // Files change only with the service; revalidation is cheap on loopback and never shows a stale page.
      'cache-control': 'no-cache',
    },
  };
}

export function dashboardRoutes(assets: ReadonlyMap<string, Asset> = loadDashboardAssets()): RouteDef[] {
  const index = assets.get('index.html')!;
  return [
    route({
      method: 'GET',
      path: '/',
      scope: 'public',
      handle: ({ req }) => {
        readQuery(req.query, []);
        return answer(index);
      },
    }),
    route({
      method: 'GET',
      path: '/dashboard/:file',
      scope: 'public',
      handle: ({ req, params }) => {
        readQuery(req.query, []);
        const asset = assets.get(params['file']!);
        if (!asset) throw new ServiceError('NOT_FOUND', 'No such dashboard file.', { param: 'file' });
        return answer(asset);
      },
    }),
  ];
}
