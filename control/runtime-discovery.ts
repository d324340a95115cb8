import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import type { ProviderKind } from '../protocol/providers.ts';
import { LLAMA_SERVER_BINARIES, locateOnPath, runVersion } from './llama-server-binary.ts';
import type { DiscoveredRuntime, DiscoveryAnswer, DiscoverySource } from '../protocol/runtime-discovery.ts';

// Local runtimes the service could use: an Ollama daemon at its default address, llama-server binaries on
// PATH and the configured local providers. Every probe is async and bounded in time and size, so the edge
// thread never waits on one; results are cached briefly so a polling client does not probe each time.
// Nothing here reports a filesystem path or a credential: URLs lose their userinfo, query and fragment, and
// failure reasons come from a fixed vocabulary.

export type {
  DiscoveredRuntime,
  DiscoveryAnswer,
  DiscoverySource,
  DiscoveryState,
} from '../protocol/runtime-discovery.ts';

export interface DiscoveryProvider {
  id: string;
  kind: ProviderKind;
  baseUrl: string | null;
}

export interface DiscoveryOptions {
  providers: () => readonly DiscoveryProvider[];
  env?: NodeJS.ProcessEnv;
  cacheMs?: number;
  httpTimeoutMs?: number;
  versionTimeoutMs?: number;
  now?: () => number;
}

const VERSION_TOKEN = /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/;
const MAX_BODY = 4096;
const MAX_PROVIDERS = 64;
const PROBE_CONCURRENCY = 8;
const LOCAL_KINDS: ReadonlySet<string> = new Set(['ollama', 'llamacpp', 'openai_compatible']);

/** A version string a runtime reported, if it looks like one (bounded, no spaces or markup). */
export function boundedVersion(value: unknown): string | null {
  return typeof value === 'string' && VERSION_TOKEN.test(value.trim()) ? value.trim() : null;
}

/**
 * llama.cpp's `--version` (on stderr) has printed `version: 4521 (a6744e43)` and, since its numbered
 * releases, `version: 0.4.1-dev (build 10991, commit 930e2fa59)`, then a `built with ...` line. Backend
 * loading lines may come first. The older form's number is the build (release tag `b4521`).
 */
export function parseLlamaServerVersion(output: string): { version: string | null; build: number | null } {
  for (const line of output.slice(0, MAX_BODY).split(/\r?\n/)) {
    const m = /^\s*version:\s*(\S+)(?:\s*\(([^)]*)\))?/.exec(line);
    if (!m) continue;
    const head = m[1]!;
    const inner = m[2] ?? '';
    const buildMatch = /\bbuild\s+(\d{1,9})\b/.exec(inner);
    if (/^\d{1,9}$/.test(head) && !buildMatch) return { version: `b${head}`, build: Number(head) };
    return { version: boundedVersion(head), build: buildMatch ? Number(buildMatch[1]) : null };
  }
  return { version: null, build: null };
}

/** `GET /api/version` answers `{"version":"0.12.0"}`. */
export function parseOllamaVersion(body: string): string | null {
  try {
    const parsed: unknown = JSON.parse(body);
    return parsed !== null && typeof parsed === 'object'
      ? boundedVersion((parsed as { version?: unknown }).version)
      : null;
  } catch {
    return null;
  }
}

/** A URL fit to show: scheme, host, port and path only; null when it does not parse as http(s). */
export function redactUrl(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  const shown = `${url.protocol}//${url.host}${url.pathname}`.replace(/\/+$/, '');
  return shown.length <= 2048 ? shown : null;
}

/**
 * Where the Ollama client looks, from OLLAMA_HOST as Ollama reads it: `host`, `host:port`,
 * `scheme://host[:port][/path]`, quotes trimmed; no scheme means http on port 11434, an explicit http or
 * https scheme without a port means 80 or 443. A listen-everywhere address (`0.0.0.0`, `::`) is probed on
 * loopback, as a client on this machine would reach it.
 */
export function ollamaAddress(env: NodeJS.ProcessEnv): string {
  const override = env.SWITCHYARD_DISCOVERY_OLLAMA_URL?.trim();
  if (override) return override;
  const raw = (env.OLLAMA_HOST ?? '')
    .trim()
    .replace(/^["']|["']$/g, '')
    .trim();
  let scheme = 'http';
  let rest = raw;
  let defaultPort = '11434';
  const cut = raw.indexOf('://');
  if (cut >= 0) {
    scheme = raw.slice(0, cut).toLowerCase();
    rest = raw.slice(cut + 3);
    if (scheme === 'http') defaultPort = '80';
    else if (scheme === 'https') defaultPort = '443';
  }
  const slash = rest.indexOf('/');
  const hostPort = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = slash >= 0 ? rest.slice(slash) : '';
  const split = /^(\[[^\]]*\]|[^:]*):(\d{1,5})$/.exec(hostPort);
  let host = split ? split[1]! : hostPort;
  let port = split ? split[2]! : defaultPort;
  if (host === '') host = '127.0.0.1';
  if (Number(port) > 65535) port = defaultPort;
  if (host === '0.0.0.0') host = '127.0.0.1';
  if (host === '[::]' || host === '::') host = '[::1]';
  if (host.includes(':') && !host.startsWith('[')) host = `[${host}]`;
  return `${scheme}://${host}:${port}${path}`;
}

/** A failed request as a reason a client may see: its kind, never its message (which may carry a URL). */
function failureReason(error: unknown): string {
  const e = error as { name?: string; code?: string };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || e?.code === 'ABORT_ERR') return 'timed out';
  switch (e?.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'ECONNRESET':
    case 'EPIPE':
      return 'connection reset';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    default:
      return /CERT|TLS|SSL/i.test(e?.code ?? '') ? 'TLS error' : 'unreachable';
  }
}

export type Probe = { ok: true; body: string } | { ok: false; reason: string };

/**
 * One GET through node:http(s) (not fetch, which refuses ports such as 6000 that a local server may use),
 * no redirects followed, no proxy, at most MAX_BODY bytes of the answer read.
 */
export function probe(url: string, timeoutMs: number): Promise<Probe> {
  return new Promise((resolve) => {
    const get = url.startsWith('https:') ? httpsGet : httpGet;
    let settled = false;
    const done = (result: Probe) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    try {
      const req = get(
        url,
        { signal: AbortSignal.timeout(timeoutMs), agent: false, headers: { accept: 'application/json' } },
        (res) => {
          const status = res.statusCode ?? 0;
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            body += chunk;
            if (body.length >= MAX_BODY) res.destroy();
          });
          const finish = () =>
            done(
              status >= 200 && status < 300
                ? { ok: true, body: body.slice(0, MAX_BODY) }
                : { ok: false, reason: `HTTP ${status}` },
            );
          res.on('end', finish);
          res.on('close', finish);
          res.on('error', finish);
        },
      );
      req.on('error', (error) => done({ ok: false, reason: failureReason(error) }));
    } catch (error) {
      done({ ok: false, reason: failureReason(error) });
    }
  });
}

/** The path each kind answers cheaply: Ollama its version, llama-server its health, a styleA server its models. */
function probePath(kind: DiscoveredRuntime['kind']): string {
  if (kind === 'ollama') return '/api/version';
  if (kind === 'llamacpp') return '/health';
  return '/models';
}

async function probeNetwork(
  kind: DiscoveredRuntime['kind'],
  source: DiscoverySource,
  baseUrl: string,
  timeoutMs: number,
  providerId?: string,
): Promise<DiscoveredRuntime> {
  const url = redactUrl(baseUrl);
  const base = { kind, source, ...(providerId !== undefined && { providerId }), url };
  if (url === null) return { ...base, version: null, state: 'unreachable', reason: 'invalid URL' };
  const result = await probe(url + probePath(kind), timeoutMs);
  if (!result.ok) return { ...base, version: null, state: 'unreachable', reason: result.reason };
  return {
    ...base,
    version: kind === 'ollama' ? parseOllamaVersion(result.body) : null,
    state: 'reachable',
    reason: null,
  };
}

/** The first `llama-server` (and `llama-server.exe`) in PATH order, as a shell would run it. */
async function findOnPath(env: NodeJS.ProcessEnv, timeoutMs: number): Promise<DiscoveredRuntime[]> {
  const found: DiscoveredRuntime[] = [];
  for (const binary of LLAMA_SERVER_BINARIES) {
    const file = await locateOnPath(env, binary);
    if (file === null) continue;
    const { version, build } = parseLlamaServerVersion(await runVersion(file, timeoutMs));
    found.push({ kind: 'llamacpp', source: 'path', version, build, state: 'found', binary, onPath: true });
  }
  return found;
}

async function limited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export function createRuntimeDiscovery(options: DiscoveryOptions) {
  const env = options.env ?? process.env;
  const cacheMs = options.cacheMs ?? 5_000;
  const httpTimeoutMs = options.httpTimeoutMs ?? 1_500;
  const versionTimeoutMs = options.versionTimeoutMs ?? 2_000;
  const now = options.now ?? Date.now;
  let cached: { at: number; answer: DiscoveryAnswer } | null = null;
  let running: Promise<DiscoveryAnswer> | null = null;

  const discover = async (): Promise<DiscoveryAnswer> => {
    const configured = options
      .providers()
      .filter((p) => LOCAL_KINDS.has(p.kind) && p.baseUrl !== null)
      .slice(0, MAX_PROVIDERS);
    const [ollama, onPath, providers] = await Promise.all([
      probeNetwork('ollama', 'default_address', ollamaAddress(env), httpTimeoutMs),
      findOnPath(env, versionTimeoutMs),
      limited(configured, PROBE_CONCURRENCY, (p) =>
        probeNetwork(p.kind as DiscoveredRuntime['kind'], 'provider', p.baseUrl!, httpTimeoutMs, p.id),
      ),
    ]);
    return { data: [ollama, ...onPath, ...providers], probedAt: new Date(now()).toISOString() };
  };

  return {
    /** The cached answer while fresh, else a new probe; concurrent callers share one probe. */
    async read(refresh = false): Promise<DiscoveryAnswer> {
      if (!refresh && cached && now() - cached.at < cacheMs) return cached.answer;
      running ??= discover()
        .then((answer) => {
          cached = { at: now(), answer };
          return answer;
        })
        .finally(() => {
          running = null;
        });
      return running;
    },
  };
}
export type RuntimeDiscovery = ReturnType<typeof createRuntimeDiscovery>;
