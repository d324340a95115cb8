import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { TOKEN_SHAPE } from '../../protocol/http/tokens.ts';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import { addProvider } from '../helpers/gateway.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';
import { serviceBin, tempHome } from '../helpers/service.ts';
import { type FakeAgentRecord, readRecord, writeFakeAgents } from './launch-agent-fake.ts';

// `switchyard launch` run whole, as a person runs it (the executable in a process of its own, the service found
// from its instance file), against a service in this process with fake upstreams behind it, starting the fake
// agents of launch-agent-fake.ts from a PATH this file controls. Each run's environment and arguments are
// compared with what the launcher promises, exactly; its token is followed through the API.

const ANTHROPIC_KEY = `fake-anthropic-launch-${process.pid}`;
const OPENAI_KEY = `fake-openai-launch-${process.pid}`;
const USER_KEYS = { ANTHROPIC_API_KEY: 'sk-ant-user-own-key', OPENAI_API_KEY: 'sk-user-own-openai-key' };
const RUN_TTL_MS = 15 * 60_000;

let svc: InProcessService;
let an: anthropicFake.AnthropicFake;
let oa: openaiFake.OpenAIFake;
let scratch: string;
let agents: string;
/** The directory each launch runs in: its base name becomes part of the token's name. */
let project: string;
let dirName: string;
/** The runs' HOME: launch writes nothing into the user's agent configuration (~/.claude, ~/.codex) or beside it. */
let home: string;
const printed: string[] = [];
const running = new Set<Launch>();
/** The runs' token secrets: in no output and not in the service's log. */
const secrets: string[] = [];
/** --print-env's: printed, by design, and still never in the service's log. */
const printedSecrets: string[] = [];

before(async () => {
  an = await anthropicFake.start({ apiKey: ANTHROPIC_KEY });
  an.setModels([{ id: 'claude-sonnet-4-5' }]);
  an.setOutput({ text: 'Hello from the Anthropic-style fake.' });
  oa = await openaiFake.start({ apiKey: OPENAI_KEY });
  oa.setModels([{ id: 'gpt-5-codex' }]);
  oa.setOutput({ text: 'Hello from the OpenAI-style fake.' });
  svc = await startInProcess();
  assert.equal(await addProvider(svc, { kind: 'anthropic', baseUrl: an.baseUrl, credential: ANTHROPIC_KEY }), 1);
  assert.equal(await addProvider(svc, { kind: 'openai', baseUrl: oa.baseUrl, credential: OPENAI_KEY }), 1);
  scratch = mkdtempSync(join(tmpdir(), 'switchyard-launch-'));
  agents = writeFakeAgents(join(scratch, 'bin'));
  project = mkdtempSync(join(scratch, 'my proj-'));
  dirName = basename(project).replace(' ', '_');
  home = join(scratch, 'home');
  mkdirSync(home);
});

after(async () => {
  // A run that a failed test left waiting: SIGTERM passes through to its agent.
  for (const run of running) {
    try {
      process.kill(run.pid, 'SIGTERM');
    } catch {
      // Gone meanwhile.
    }
  }
  await Promise.all([...running].map((run) => run.exited));
  await svc?.stop();
  await an?.close();
  await oa?.close();
  // The secrets of the runs' tokens: only --print-env's own output held one, never the service's log.
  for (const secret of secrets) {
    assert.ok(!svc.log().includes(secret), 'the service logged a launch token');
    for (const text of printed) assert.ok(!text.includes(secret), 'launch printed its token');
  }
  for (const secret of printedSecrets) assert.ok(!svc.log().includes(secret), 'the service logged a launch token');
  assert.ok(secrets.length >= 5 && printedSecrets.length === 3, 'the secrets were collected');
  assert.ok(!svc.log().includes(USER_KEYS.ANTHROPIC_API_KEY));
  assert.deepEqual(readdirSync(home), [], 'launch wrote into HOME');
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** A person's shell: this service's data directory, the fake agents first on PATH, keys of their own set. */
function shell(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SWITCHYARD_HOME: svc.home,
    HOME: home,
    PATH: `${agents}:${dirname(process.execPath)}:/usr/bin:/bin`,
    FAKE_AGENT_RECORD: join(scratch, `record-${Math.random().toString(36).slice(2)}.json`),
    ...USER_KEYS,
    ...extra,
  };
  delete env.SWITCHYARD_PORT;
  delete env.SWITCHYARD_TOKEN;
  return env;
}

interface Launch {
  pid: number;
  out(): string;
  err(): string;
  /** Resolves once stdout or stderr matches. */
  until(stream: 'out' | 'err', pattern: RegExp): Promise<void>;
  exited: Promise<number | null>;
}

/** `switchyard launch <args>` in `project`, not waited for. */
function launch(args: string[], env: NodeJS.ProcessEnv, cwd = project): Launch {
  const child = spawn(process.execPath, [serviceBin(), 'launch', ...args], {
    env,
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const text = { out: '', err: '' };
  const waiters = new Set<() => void>();
  child.stdout.setEncoding('utf8').on('data', (d: string) => ((text.out += d), waiters.forEach((w) => w())));
  child.stderr.setEncoding('utf8').on('data', (d: string) => ((text.err += d), waiters.forEach((w) => w())));
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (status) => {
      printed.push(text.out, text.err);
      waiters.forEach((w) => w());
      resolve(status);
    }),
  );
  const run: Launch = {
    pid: child.pid!,
    out: () => text.out,
    err: () => text.err,
    exited,
    until(stream, pattern) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pattern.test(text[stream])) waiters.delete(check), resolve();
          else if (child.exitCode !== null || child.signalCode !== null)
            waiters.delete(check), reject(new Error(`launch ended first: ${text.out}\n${text.err}`));
        };
        waiters.add(check);
        check();
      });
    },
  };
  running.add(run);
  void exited.then(() => running.delete(run));
  return run;
}

/** The shell's environment less `unset`, plus `set`: what the agent must have been given, exactly. */
function expectedEnv(shellEnv: NodeJS.ProcessEnv, set: Record<string, string>, unset: string[]) {
  const env = { ...shellEnv };
  for (const name of unset) delete env[name];
  return { ...env, ...set };
}

const tokenIds = async () => ((await svc.request('GET', '/v1/tokens')).json.data as { id: string }[]).map((t) => t.id);

/** The newest token this service minted, from the audit log (the token itself may be gone). */
async function lastMinted(): Promise<string> {
  const events = await svc.request('GET', '/v1/audit-events?action=token.create&limit=1');
  return events.json.data[0].resourceId as string;
}

/** After a run: the token is gone from the list and its secret is refused. */
async function assertRevoked(id: string, secret: string): Promise<void> {
  assert.ok(!(await tokenIds()).includes(id), `${id} is still listed`);
  const call = await svc.request('POST', '/v1/messages', {
    token: secret,
    body: { model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
  });
  assert.equal(call.status, 401, call.text);
}

const CLAUDE_REMOVED = [
  'ANTHROPIC_API_KEY',
  'CLAUDE_CODE_OAUTH_TOKEN',
  'CLAUDE_CODE_USE_BEDROCK',
  'CLAUDE_CODE_USE_VERTEX',
  'CLAUDE_CODE_USE_FOUNDRY',
  'CLAUDE_CODE_USE_ANTHROPIC_AWS',
  'CLAUDE_CODE_USE_ANTHROPIC_GOOGLE_CLOUD',
  'CLAUDE_CODE_USE_MANTLE',
  'CLAUDE_CODE_USE_GATEWAY',
  'ANTHROPIC_SMALL_FAST_MODEL',
];

describe('claude', () => {
  test('starts Claude Code pointed at the service: exact environment, a call through, its exit code, token revoked', async () => {
    const before = await tokenIds();
    const env = shell({
      CLAUDE_CODE_USE_BEDROCK: '1',
      CLAUDE_CODE_OAUTH_TOKEN: 'oauth-x',
      ANTHROPIC_SMALL_FAST_MODEL: 'x',
    });
    const calls = an.requests.length;
    const run = launch(
      ['claude', '--model', 'anthropic/claude-sonnet-4-5', '--', '-p', 'Say hello.', '--fake-exit', '7'],
      env,
    );
    assert.equal(await run.exited, 7, run.err());
    assert.equal(run.out(), '');
    assert.equal(run.err(), '');
    const record: FakeAgentRecord = readRecord(env.FAKE_AGENT_RECORD!);
    const secret = record.env.ANTHROPIC_AUTH_TOKEN!;
    secrets.push(secret);
    assert.match(secret, TOKEN_SHAPE);
    assert.deepEqual(record.argv, ['-p', 'Say hello.', '--fake-exit', '7']);
    const model = 'anthropic/claude-sonnet-4-5';
    assert.deepEqual(
      record.env,
      expectedEnv(
        env,
        {
          ANTHROPIC_BASE_URL: svc.url,
          ANTHROPIC_AUTH_TOKEN: secret,
          ENABLE_TOOL_SEARCH: 'true',
          ANTHROPIC_MODEL: model,
          ANTHROPIC_DEFAULT_OPUS_MODEL: model,
          ANTHROPIC_DEFAULT_SONNET_MODEL: model,
          ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
          CLAUDE_CODE_SUBAGENT_MODEL: model,
        },
        CLAUDE_REMOVED,
      ),
    );
    // The call went through the service to the upstream, with the provider's key and not the run's token.
    assert.equal(record.call!.status, 200, JSON.stringify(record.call));
    const upstream = an.requests.slice(calls).filter((r) => r.path.endsWith('/messages'));
    assert.equal(upstream.length, 1);
    assert.equal((upstream[0]!.json as { model: string }).model, 'claude-sonnet-4-5');
    assert.ok(!JSON.stringify(upstream[0]!.headers).includes(secret));
    const id = await lastMinted();
    assert.ok(!before.includes(id));
    assert.deepEqual(await tokenIds(), before);
    await assertRevoked(id, secret);
    const revoked = await svc.request('GET', `/v1/audit-events?action=token.revoke&resourceId=${id}`);
    assert.equal(revoked.json.data[0].metadata.name, `launch claude ${dirName}`);
  });

  test('without --model Claude Code keeps its own model choice; SWITCHYARD_CLAUDE_BIN names another binary', async () => {
    const env = shell({
      PATH: '/usr/bin:/bin',
      SWITCHYARD_CLAUDE_BIN: join(agents, 'claude'),
      ANTHROPIC_MODEL: 'claude-sonnet-4-5',
    });
    const run = launch(['claude'], env);
    assert.equal(await run.exited, 0, run.err());
    const record = readRecord(env.FAKE_AGENT_RECORD!);
    secrets.push(record.env.ANTHROPIC_AUTH_TOKEN!);
    assert.deepEqual(record.argv, []);
    assert.equal(record.env.ANTHROPIC_MODEL, 'claude-sonnet-4-5');
    assert.equal(record.env.ANTHROPIC_DEFAULT_SONNET_MODEL, undefined);
    assert.equal(record.call!.status, 200);
  });
});

describe('codex', () => {
  test('starts Codex CLI with -c overrides before its own arguments and the token in env_key', async () => {
    const before = await tokenIds();
    const env = shell({ OPENAI_BASE_URL: 'https://api.openai.com/v1' });
    const calls = oa.requests.length;
    const run = launch(
      ['codex', '--model', 'openai/gpt-5-codex', '--', 'exec', '--skip-git-repo-check', 'Say hello.'],
      env,
    );
    assert.equal(await run.exited, 0, run.err());
    const record = readRecord(env.FAKE_AGENT_RECORD!);
    const secret = record.env.SWITCHYARD_LAUNCH_TOKEN!;
    secrets.push(secret);
    assert.match(secret, TOKEN_SHAPE);
    assert.deepEqual(record.argv, [
      '-c',
      'model_provider="switchyard"',
      '-c',
      'model_providers.switchyard.name="Switchyard"',
      '-c',
      `model_providers.switchyard.base_url="${svc.url}/v1"`,
      '-c',
      'model_providers.switchyard.env_key="SWITCHYARD_LAUNCH_TOKEN"',
      '-c',
      'model_providers.switchyard.wire_api="responses"',
      '-c',
      'model_providers.switchyard.supports_websockets=true',
      '-c',
      'model="openai/gpt-5-codex"',
      'exec',
      '--skip-git-repo-check',
      'Say hello.',
    ]);
    assert.deepEqual(
      record.env,
      expectedEnv(env, { SWITCHYARD_LAUNCH_TOKEN: secret }, ['OPENAI_API_KEY', 'OPENAI_BASE_URL']),
    );
    assert.equal(record.call!.status, 200, JSON.stringify(record.call));
    assert.equal(record.call!.url, `${svc.url}/v1/responses`);
    const upstream = oa.requests.slice(calls).filter((r) => r.path.endsWith('/responses'));
    assert.equal(upstream.length, 1);
    assert.equal((upstream[0]!.json as { model: string }).model, 'gpt-5-codex');
    assert.deepEqual(await tokenIds(), before);
    await assertRevoked(await lastMinted(), secret);
  });
});

describe('while the agent runs', () => {
  test('--usd puts a month dollar limit on the token; SIGTERM reaches the agent; both are gone after', async () => {
    const env = shell();
    const run = launch(['codex', '--usd', '2.50', '--', '--fake-wait'], env);
    await run.until('out', /^ready$/m);
    const id = await lastMinted();
    const token = (await svc.request('GET', `/v1/tokens/${id}`)).json;
    assert.equal(token.name, `launch codex ${dirName}`);
    assert.deepEqual(token.scopes, ['inference']);
    const ttl = Date.parse(token.expiresAt) - Date.parse(token.createdAt);
    assert.ok(Math.abs(ttl - RUN_TTL_MS) < 5_000, `expires ${ttl} ms after its creation`);
    const limits = (await svc.request('GET', '/v1/limits')).json.data.filter(
      (l: { scope: { id: string } }) => l.scope.id === id,
    );
    assert.equal(limits.length, 1);
    assert.deepEqual(
      {
        name: limits[0].name,
        scope: limits[0].scope,
        window: limits[0].window,
        metric: limits[0].metric,
        max: limits[0].max,
      },
      {
        name: `launch codex ${dirName} ($2.50)`,
        scope: { kind: 'token', id },
        window: 'month',
        metric: 'usd',
        max: 2.5,
      },
    );
    process.kill(run.pid, 'SIGTERM');
    assert.equal(await run.exited, 128 + 15, run.err());
    const record = readRecord(env.FAKE_AGENT_RECORD!);
    secrets.push(record.env.SWITCHYARD_LAUNCH_TOKEN!);
    assert.deepEqual(record.signals, ['SIGTERM']);
    assert.equal((await svc.request('GET', `/v1/limits/${limits[0].id}`)).status, 404);
    await assertRevoked(id, record.env.SWITCHYARD_LAUNCH_TOKEN!);
  });

  test('the expiry moves forward on each tick; a failed extension or revocation warns and ends nothing', async () => {
    const env = shell({ SWITCHYARD_LAUNCH_RENEW_MS: '100' });
    const run = launch(['claude', '--', '--fake-wait'], env);
    await run.until('out', /^ready$/m);
    const id = await lastMinted();
    const isExtension = (l: Record<string, unknown>) => l.route === 'PATCH /v1/tokens/:id';
    const extended = (count: number) =>
      svc.waitForLog((l) => isExtension(l) && svc.logLines().filter(isExtension).length >= count, 10_000);
    const seen = svc.logLines().filter(isExtension).length;
    await extended(seen + 1);
    const first = (await svc.request('GET', `/v1/tokens/${id}`)).json.expiresAt as string;
    await extended(svc.logLines().filter(isExtension).length + 1);
    const second = (await svc.request('GET', `/v1/tokens/${id}`)).json.expiresAt as string;
    assert.ok(Date.parse(second) > Date.parse(first), `${second} after ${first}`);
    // Revoked behind its back: the next extensions fail, each said on stderr, and the agent runs on.
    assert.equal((await svc.request('DELETE', `/v1/tokens/${id}`)).status, 200);
    await run.until('err', /could not extend token tok_\w+ \(.*\); trying again on the next tick/);
    await run.until('err', /could not extend[^\n]*\n[^\n]*could not extend/);
    process.kill(run.pid, 'SIGINT');
    assert.equal(await run.exited, 128 + 2);
    const record = readRecord(env.FAKE_AGENT_RECORD!);
    secrets.push(record.env.ANTHROPIC_AUTH_TOKEN!);
    assert.deepEqual(record.signals, ['SIGINT']);
    assert.match(run.err(), new RegExp(`could not revoke token ${id} \\(.*\\); it expires on its own at `));
  });
});

describe('--print-env', () => {
  test('Claude Code: export and unset lines on stdout; the token (12 hours) works and is not revoked', async () => {
    const run = launch(['claude', '--print-env', '--model', 'claude-sonnet-4-5'], shell());
    assert.equal(await run.exited, 0, run.err());
    const secret = /^export ANTHROPIC_AUTH_TOKEN=(sk-svc-[\w-]{43})$/m.exec(run.out())?.[1];
    assert.ok(secret, run.out());
    printedSecrets.push(secret);
    const m = 'claude-sonnet-4-5';
    assert.equal(
      run.out(),
      [
        `export ANTHROPIC_BASE_URL=${svc.url}`,
        `export ANTHROPIC_AUTH_TOKEN=${secret}`,
        'export ENABLE_TOOL_SEARCH=true',
        ...['ANTHROPIC_MODEL', 'ANTHROPIC_DEFAULT_OPUS_MODEL', 'ANTHROPIC_DEFAULT_SONNET_MODEL'].map(
          (v) => `export ${v}=${m}`,
        ),
        ...['ANTHROPIC_DEFAULT_HAIKU_MODEL', 'CLAUDE_CODE_SUBAGENT_MODEL'].map((v) => `export ${v}=${m}`),
        `unset ${CLAUDE_REMOVED.join(' ')}`,
        '',
      ].join('\n'),
    );
    const id = await lastMinted();
    assert.ok(!run.err().includes(secret));
    assert.match(run.err(), new RegExp(`^Token ${id} \\("launch claude ${dirName}", inference\\) expires at `));
    assert.match(run.err(), /With these set, run Claude Code:\n {2}claude\n$/);
    const token = (await svc.request('GET', `/v1/tokens/${id}`)).json;
    const ttl = Date.parse(token.expiresAt) - Date.parse(token.createdAt);
    assert.ok(Math.abs(ttl - 12 * 3_600_000) < 5_000, `expires ${ttl} ms after its creation`);
    const call = await svc.request('POST', '/v1/messages', {
      token: secret,
      body: { model: m, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(call.status, 200, call.text);
  });

  test('Codex CLI: a shell that takes stdout over and runs the command line from stderr runs Codex as launch does', async () => {
    const env = shell();
    const run = launch(
      ['codex', '--print-env', '--model', "it's/model", '--', 'exec', 'Say "hi".', '--fake-exit', '3'],
      env,
    );
    assert.equal(await run.exited, 0, run.err());
    const secret = /^export SWITCHYARD_LAUNCH_TOKEN=(sk-svc-[\w-]{43})$/m.exec(run.out())?.[1];
    assert.ok(secret, run.out());
    printedSecrets.push(secret);
    assert.equal(run.out(), `export SWITCHYARD_LAUNCH_TOKEN=${secret}\nunset OPENAI_API_KEY OPENAI_BASE_URL\n`);
    const command = /With these set, run Codex CLI:\n {2}(codex .*)\n$/.exec(run.err())?.[1];
    assert.ok(command, run.err());
    const shellRun = spawn('bash', ['-c', `${run.out()}${command}`], { env, stdio: 'ignore' });
    assert.equal(await new Promise((resolve) => shellRun.on('close', resolve)), 3);
    const record = readRecord(env.FAKE_AGENT_RECORD!);
    assert.deepEqual(record.argv.slice(-6), ['-c', `model="it's/model"`, 'exec', 'Say "hi".', '--fake-exit', '3']);
    assert.equal(record.env.SWITCHYARD_LAUNCH_TOKEN, secret);
    assert.equal(record.env.OPENAI_API_KEY, undefined);
    // The call reached the service, which found no model of that name: the token and the URL were right.
    assert.equal(record.call!.url, `${svc.url}/v1/responses`);
    assert.equal(record.call!.status, 404, JSON.stringify(record.call));
    const json = launch(['codex', '--print-env', '--json'], env);
    assert.equal(await json.exited, 0, json.err());
    const answer = JSON.parse(json.out());
    printedSecrets.push(answer.secret);
    assert.deepEqual(Object.keys(answer), ['token', 'secret', 'limit', 'set', 'unset', 'command']);
    assert.equal(answer.set.SWITCHYARD_LAUNCH_TOKEN, answer.secret);
    assert.equal(answer.command[0], 'codex');
    assert.equal(answer.command.length, 13);
  });
});

describe('before the agent', () => {
  test('no agent binary: exit 1 naming it, and no token is minted', async () => {
    const before = await lastMinted();
    const run = launch(['codex'], shell({ PATH: '/usr/bin:/bin' }));
    assert.equal(await run.exited, 1);
    assert.match(
      run.err(),
      /^switchyard launch: Codex CLI \(`codex`\) was not found on PATH\. .*SWITCHYARD_CODEX_BIN\.\n$/,
    );
    assert.equal(await lastMinted(), before);
  });

  test('no service: exit 3, and the agent is not started', async () => {
    const env = shell({ SWITCHYARD_HOME: tempHome() });
    const run = launch(['claude'], env);
    assert.equal(await run.exited, 3);
    assert.match(run.err(), /^switchyard launch: No running Switchyard service found\./);
    assert.throws(() => readRecord(env.FAKE_AGENT_RECORD!), /ENOENT/);
  });

  test('bad usage: exit 2 with the message, before anything else', async () => {
    const run = launch(['claude', '--usd', '-3'], shell({ SWITCHYARD_HOME: tempHome() }));
    assert.equal(await run.exited, 2);
    assert.equal(run.err(), 'switchyard launch: --usd takes a dollar amount above 0 (such as 5 or 2.50), not "-3".\n');
  });
});
