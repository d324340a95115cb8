import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import { addProvider } from '../helpers/gateway.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';
import { serviceBin } from '../helpers/service.ts';
import { writeFakeAgents } from './launch-agent-fake.ts';

// What the suites that run `switchyard launch` whole share (launch-run.suite.ts, launch-print-env.suite.ts): a
// service in this process with fake upstreams behind it, the fake agents of launch-agent-fake.ts on a PATH the
// suite controls, and launch run as a person runs it (the executable in a process of its own, the service found
// from its instance file). Every secret a run handed out is checked against everything printed and logged at
// the end.

export const USER_KEYS = { ANTHROPIC_API_KEY: 'sk-ant-user-own-key', OPENAI_API_KEY: 'sk-user-own-openai-key' };

/** What launch removes from Claude Code's environment (with --model; the old fast-model variable too). */
export const CLAUDE_REMOVED = [
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

export interface Launch {
  pid: number;
  out(): string;
  err(): string;
  /** Resolves once stdout or stderr matches; rejects if launch ends first. */
  until(stream: 'out' | 'err', pattern: RegExp): Promise<void>;
  exited: Promise<number | null>;
}

export interface LaunchBed {
  svc: InProcessService;
  an: anthropicFake.AnthropicFake;
  oa: openaiFake.OpenAIFake;
  /** The directory with the fake `claude` and `codex`. */
  agents: string;
  /** Where each launch runs, and its base name as the token's name spells it. */
  project: string;
  dirName: string;
  /** The runs' token secrets: in no output and not in the service's log. */
  secrets: string[];
  /** --print-env's: printed, by design, and still never in the service's log. */
  printedSecrets: string[];
  /** A person's shell: this service's data directory, the fake agents first on PATH, keys of their own set. */
  shell(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  /** `switchyard launch <args>` in `project`, not waited for. */
  launch(args: string[], env: NodeJS.ProcessEnv): Launch;
  tokenIds(): Promise<string[]>;
  /** The newest token the service minted, from the audit log (the token itself may be gone). */
  lastMinted(): Promise<string>;
  /** After a run: the token is gone from the list and its secret is refused. */
  assertRevoked(id: string, secret: string): Promise<void>;
  /** Ends what is left; checks the secrets (at least `secrets` of runs and exactly `printed` of --print-env). */
  close(expected: { secrets: number; printed: number }): Promise<void>;
}

/** The shell's environment less `unset`, plus `set`: what the agent must have been given, exactly. */
export function expectedEnv(shellEnv: NodeJS.ProcessEnv, set: Record<string, string>, unset: string[]) {
  const env = { ...shellEnv };
  for (const name of unset) delete env[name];
  return { ...env, ...set };
}

function spawnLaunch(args: string[], env: NodeJS.ProcessEnv, cwd: string, printed: string[]): Launch {
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
  return {
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
}

export async function startLaunchBed(): Promise<LaunchBed> {
  const anthropicKey = `fake-anthropic-launch-${process.pid}`;
  const openaiKey = `fake-openai-launch-${process.pid}`;
  const an = await anthropicFake.start({ apiKey: anthropicKey });
  an.setModels([{ id: 'claude-sonnet-4-5' }]);
  an.setOutput({ text: 'Hello from the Anthropic-style fake.' });
  const oa = await openaiFake.start({ apiKey: openaiKey });
  oa.setModels([{ id: 'gpt-5-codex' }]);
  oa.setOutput({ text: 'Hello from the OpenAI-style fake.' });
  const svc = await startInProcess();
  assert.equal(await addProvider(svc, { kind: 'anthropic', baseUrl: an.baseUrl, credential: anthropicKey }), 1);
  assert.equal(await addProvider(svc, { kind: 'openai', baseUrl: oa.baseUrl, credential: openaiKey }), 1);
  const scratch = mkdtempSync(join(tmpdir(), 'switchyard-launch-'));
  const agents = writeFakeAgents(join(scratch, 'bin'));
  const project = mkdtempSync(join(scratch, 'my proj-'));
  // The runs' HOME: launch writes nothing into the user's agent configuration (~/.claude, ~/.codex) or beside it.
  const home = join(scratch, 'home');
  mkdirSync(home);
  const printed: string[] = [];
  const running = new Set<Launch>();
  const tokenIds = async () =>
    ((await svc.request('GET', '/v1/tokens')).json.data as { id: string }[]).map((t) => t.id);
  const bed: LaunchBed = {
    svc,
    an,
    oa,
    agents,
    project,
    dirName: basename(project).replace(' ', '_'),
    secrets: [],
    printedSecrets: [],
    shell(extra = {}) {
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
    },
    launch(args, env) {
      const run = spawnLaunch(args, env, project, printed);
      running.add(run);
      void run.exited.then(() => running.delete(run));
      return run;
    },
    tokenIds,
    async lastMinted() {
      const events = await svc.request('GET', '/v1/audit-events?action=token.create&limit=1');
      return events.json.data[0].resourceId as string;
    },
    async assertRevoked(id, secret) {
      assert.ok(!(await tokenIds()).includes(id), `${id} is still listed`);
      const call = await svc.request('POST', '/v1/messages', {
        token: secret,
        body: { model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(call.status, 401, call.text);
    },
    async close(expected) {
      // A run that a failed test left waiting: SIGTERM passes through to its agent.
      for (const run of running) {
        try {
          process.kill(run.pid, 'SIGTERM');
        } catch {
          // Gone meanwhile.
        }
      }
      await Promise.all([...running].map((run) => run.exited));
      await svc.stop();
      await an.close();
      await oa.close();
      const log = svc.log();
      for (const secret of bed.secrets) {
        assert.ok(!log.includes(secret), 'the service logged a launch token');
        for (const text of printed) assert.ok(!text.includes(secret), 'launch printed its token');
      }
      for (const secret of bed.printedSecrets) assert.ok(!log.includes(secret), 'the service logged a launch token');
      assert.ok(bed.secrets.length >= expected.secrets, `${bed.secrets.length} run secrets collected`);
      assert.equal(bed.printedSecrets.length, expected.printed, '--print-env secrets collected');
      assert.ok(!log.includes(USER_KEYS.ANTHROPIC_API_KEY) && !log.includes(anthropicKey));
      assert.deepEqual(readdirSync(home), [], 'launch wrote into HOME');
      rmSync(scratch, { recursive: true, force: true });
    },
  };
  return bed;
}
