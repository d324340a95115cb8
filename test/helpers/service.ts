import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, existsSync, rmSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { staleBuild } from '../../bin/build-stamp.js';
import { VAULT_FILE } from '../../store/vault/file.ts';

// Runs the real service as a child process on a temporary data directory and a free port, and keeps
// everything it said (stdout log, stderr notices) and every response the test received, so a suite can
// grep all of it for secrets at the end.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = join(ROOT, 'bin', 'switchyard.js');
const DIST = new URL('../../dist/', import.meta.url);

/**
 * The executable a service starts from: dist/'s, as `npm start` runs it, while dist/ was built from the
 * source as it is now (`npm test` builds it first), else the source's, through tsx. Checked at each start, so
 * an edit made meanwhile never runs old code (the build's own executable refuses to). A service through tsx
 * spends ~1.7 s more CPU starting (each of its threads registers the loader), times the suite's 60-odd
 * starts. The source's own path stays covered where a test asks for BIN itself (cli.test.ts starts a whole
 * service that way).
 */
export function serviceBin(): string {
  return staleBuild(DIST) === null ? fileURLToPath(new URL('bin/switchyard.js', DIST)) : BIN;
}

export interface Reply {
  status: number;
  headers: Record<string, string>;
  text: string;
  /** Parsed JSON body, or undefined when the body is empty or not JSON. */
  json: any;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** A string or Buffer is sent as is; anything else is JSON-encoded with a JSON content type. */
  body?: unknown;
  /** Local token to send as a Bearer token; defaults to the admin token; `null` sends none. */
  token?: string | null;
}

/** What a test needs of a service, spawned (startService) or in the test process (in-process.ts). */
export interface ServiceHandle {
  home: string;
  port: number;
  url: string;
  /** The bootstrap admin token, read from `<home>/token`. */
  adminToken: string;
  request(method: string, path: string, options?: RequestOptions): Promise<Reply>;
  /** Everything the service logged (a spawned one's stdout). */
  log(): string;
  /**
   * What the service wrote to stderr: a spawned one's notices for the terminal; for one in the test process,
   * whatever reached the process's stderr while it ran (it prints no notices: those are service/main.ts's).
   */
  stderr(): string;
  /** Parsed log lines. */
  logLines(): Record<string, unknown>[];
  /** Resolves with the first log line that satisfies `match`; the log is written asynchronously. */
  waitForLog(match: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Responses that legitimately hold a secret (token creation), excluded from leak checks. */
  markSecretBearing(reply: Reply): void;
  /** Every recorded response, as text, except the ones marked as secret-bearing. */
  responsesText(): string;
  stop(): Promise<number | null>;
}

export interface TestService extends ServiceHandle {
  /** Resolves once stderr matches; notices are written after the listening log line. */
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<string>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  kill9(): Promise<void>;
  process: ChildProcess;
}

// A test file leaves nothing behind, also when it fails: at its process's exit every service it started and
// did not stop is killed (a supervised one's service then stops with its supervisor), and every data
// directory it made is removed.
const homes: string[] = [];
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) {
    try {
      child.kill('SIGKILL');
    } catch {
      // Gone already.
    }
  }
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

export function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'switchyard-test-'));
  homes.push(home);
  return home;
}

export function rawRequest(
  port: number,
  method: string,
  path: string,
  options: RequestOptions & { adminToken?: string } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  const token = options.token === undefined ? options.adminToken : options.token;
  if (token) headers['authorization'] ??= `Bearer ${token}`;
  let payload: Buffer | undefined;
  if (typeof options.body === 'string') payload = Buffer.from(options.body);
  else if (Buffer.isBuffer(options.body)) payload = options.body;
  else if (options.body !== undefined) {
    payload = Buffer.from(JSON.stringify(options.body));
    headers['content-type'] ??= 'application/json';
  }
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        const flat: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers))
          if (v !== undefined) flat[k] = Array.isArray(v) ? v.join(', ') : v;
        resolve({ status: res.statusCode ?? 0, headers: flat, text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (payload) req.end(payload);
    else req.end();
  });
}

/** Writes `bytes` on a new connection and collects everything until the service closes it. */
export function untilClosed(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
    socket.write(bytes);
  });
}

/**
 * After `svc.stop()`: none of `secrets` is in a response the test received, in what the service logged, or
 * in any file of its data directory but the vault's (the store's LMDB files included).
 */
export function assertSecretsNowhere(svc: ServiceHandle, secrets: readonly string[]): void {
  const responses = svc.responsesText();
  const log = svc.log();
  for (const s of secrets) {
    if (responses.includes(s)) throw new Error(`a response holds ${s}`);
    if (log.includes(s)) throw new Error(`the log holds ${s}`);
  }
  const files = readdirSync(svc.home, { recursive: true, encoding: 'utf8' }).filter(
    (f) => f !== VAULT_FILE && statSync(join(svc.home, f)).isFile(),
  );
  if (!files.some((f) => f.endsWith('.mdb')))
    throw new Error('the store was not scanned: no .mdb file under the data directory');
  for (const f of files) {
    const bytes = readFileSync(join(svc.home, f));
    for (const s of secrets) if (bytes.includes(s)) throw new Error(`${f} holds ${s}`);
  }
}

/**
 * The environment a person's shell gives a CLI command against the service of `home`: found through its data
 * directory and instance file, with the admin token of that directory (no port, no token of the test's own).
 */
export function shellEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SWITCHYARD_HOME: home,
    XDG_STATE_HOME: join(home, 'state'),
    XDG_CONFIG_HOME: join(home, 'config'),
  };
  delete env.SWITCHYARD_PORT;
  delete env.SWITCHYARD_TOKEN;
  return env;
}

/**
 * What a service handle of either kind (spawned, or in the test process) is made of: the address, the admin
 * token, the requests it answered and what it logged so far.
 */
export function handleParts(
  home: string,
  port: number,
  out: () => string,
  err: () => string,
): Omit<ServiceHandle, 'stop'> {
  const tokenFile = join(home, 'token');
  const adminToken = existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8').trim() : '';
  // Each line is parsed once: tests poll the log (waitForLog every 10 ms), and reparsing a long log each time
  // cost a suite more CPU than its service did. A line still being written waits for its newline.
  const parsed: Record<string, unknown>[] = [];
  let parsedUpTo = 0;
  const parseNew = () => {
    const text = out();
    const end = text.lastIndexOf('\n') + 1;
    if (end > parsedUpTo) {
      for (const l of text.slice(parsedUpTo, end).split('\n'))
        if (l.trim() !== '') parsed.push(JSON.parse(l) as Record<string, unknown>);
      parsedUpTo = end;
    }
    return parsed;
  };
  const logLines = () => parseNew().slice();
  const replies: Reply[] = [];
  const secretBearing = new Set<Reply>();
  return {
    home,
    port,
    url: `http://127.0.0.1:${port}`,
    adminToken,
    async request(method, path, opts = {}) {
      const reply = await rawRequest(port, method, path, { ...opts, adminToken }).catch((cause: Error) => {
        // A connection that closes without an answer is rare and hard to reproduce: keep what the service
        // logged (the JSON log holds no secrets; stderr holds the bootstrap token and stays out).
        throw new Error(`${method} ${path}: ${cause.message}; the service's last log lines:\n${out().slice(-3000)}`, {
          cause,
        });
      });
      replies.push(reply);
      return reply;
    },
    log: out,
    stderr: err,
    logLines,
    async waitForLog(match, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      // Each line is matched once, the new ones at each look.
      for (let from = 0; ; ) {
        const lines = parseNew();
        for (; from < lines.length; from++) if (match(lines[from]!)) return lines[from]!;
        if (Date.now() > deadline) throw new Error('no matching log line');
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    markSecretBearing: (reply) => void secretBearing.add(reply),
    responsesText: () =>
      replies
        .filter((r) => !secretBearing.has(r))
        .map((r) => JSON.stringify(r.headers) + '\n' + r.text)
        .join('\n'),
  };
}

/** `bin` runs another executable than the source's, e.g. a compiled build's bin/switchyard.js. */
export async function startService(
  options: { home?: string; env?: Record<string, string>; bin?: string } = {},
): Promise<TestService> {
  const home = options.home ?? tempHome();
  const child = spawn(process.execPath, [options.bin ?? serviceBin(), 'start'], {
    cwd: ROOT,
    // The file vault by default: a developer's real login keyring is no place for test credentials.
    // test/store/vault.suite.ts covers the keychain backend. Unsupervised by default, so that `process` is
    // the service itself (kill9, RSS by pid); test/integration/supervisor.test.ts turns the supervisor on.
    // Gauge sources may reach loopback hosts only: no test can poll a public status page or provider API.
    // XDG_STATE_HOME: the service records itself for the CLI there (bin/locate.js), not in the user's own.
    env: {
      ...process.env,
      SWITCHYARD_HOME: home,
      SWITCHYARD_PORT: '0',
      SWITCHYARD_LOG_LEVEL: 'info',
      SWITCHYARD_VAULT: 'file',
      SWITCHYARD_SUPERVISE: '0',
      SWITCHYARD_GAUGE_ALLOWED_HOSTS: 'loopback',
      XDG_STATE_HOME: join(home, 'state'),
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.on('close', () => running.delete(child));
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  // 'close' comes after stdout and stderr are drained, so the whole log is read by then.
  let stopping = false;
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code, signal) => {
      // A service that dies on its own takes every later request of the file with it: say why, once.
      if (!stopping) process.stderr.write(`switchyard exited unexpectedly (${code ?? signal}):\n${err.slice(-4000)}\n`);
      resolve(code);
    }),
  );

  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start:\n${err}\n${out}`)), 20_000);
    const check = () => {
      for (const line of out.split('\n')) {
        if (!line.includes('"msg":"listening"')) continue;
        clearTimeout(timer);
        resolve((JSON.parse(line) as { port: number }).port);
        return;
      }
    };
    child.stdout!.on('data', check);
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code} before listening:\n${err}\n${out}`));
    });
  });

  return {
    ...handleParts(
      home,
      port,
      () => out,
      () => err,
    ),
    process: child,
    async waitForStderr(pattern, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(err)) {
        if (Date.now() > deadline) throw new Error(`stderr never matched ${pattern}: ${err}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      return err;
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null) return child.exitCode;
      stopping = true;
      child.kill(signal);
      return exited;
    },
    async kill9() {
      if (child.exitCode !== null) return;
      stopping = true;
      child.kill('SIGKILL');
      await exited;
    },
  };
}
