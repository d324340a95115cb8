import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { UsageError } from '../../cli/args.ts';
import { CliError } from '../../cli/client.ts';
import { AGENT_NAMES, AGENTS } from '../../cli/launch/agents.ts';
import { findBinary } from '../../cli/launch/find-binary.ts';
import { tokenName } from '../../cli/launch/index.ts';
import { parseLaunch } from '../../cli/launch/options.ts';
import { shellWord } from '../../cli/launch/print-env.ts';
import { agentEnv } from '../../cli/launch/run-agent.ts';

// `switchyard launch` without a service: its options, what each agent's file sets and removes, the token's
// name, the binary lookup and the shell quoting of --print-env. test/cli/launch-run.suite.ts runs it whole.

const CTX = { baseUrl: 'http://127.0.0.1:3939', token: 'sk-svc-secret', model: null, env: {} };
const CLAUDE_CONFLICTS = [
  'ANTHROPIC_API_KEY',
  'CLAUDE_CODE_OAUTH_TOKEN',
  'CLAUDE_CODE_USE_BEDROCK',
  'CLAUDE_CODE_USE_VERTEX',
  'CLAUDE_CODE_USE_FOUNDRY',
  'CLAUDE_CODE_USE_ANTHROPIC_AWS',
  'CLAUDE_CODE_USE_ANTHROPIC_GOOGLE_CLOUD',
  'CLAUDE_CODE_USE_MANTLE',
  'CLAUDE_CODE_USE_GATEWAY',
];

const usage = (args: string[], message: RegExp) =>
  assert.throws(
    () => parseLaunch(args),
    (err: unknown) => err instanceof UsageError && err.exitCode === 2 && message.test(err.message),
  );

describe('options', () => {
  test('the agent, its options, and everything after -- for the agent untouched', () => {
    assert.deepEqual(parseLaunch(['codex', '--model', 'openai/gpt-5', '--usd', '$2.50', '--', 'exec', '--usd', '-x']), {
      agent: 'codex',
      model: 'openai/gpt-5',
      usd: 2.5,
      printEnv: false,
      json: false,
      agentArgs: ['exec', '--usd', '-x'],
    });
    assert.deepEqual(parseLaunch(['claude', '--print-env', '--json']), {
      agent: 'claude',
      model: null,
      usd: null,
      printEnv: true,
      json: true,
      agentArgs: [],
    });
    assert.equal(parseLaunch(['claude', '--usd=7']).usd, 7);
  });

  test('bad input is a usage error that says what is wrong', () => {
    usage([], /Which agent\? One of: claude, codex/);
    usage(['gemini'], /Unknown agent "gemini"\. Agents: claude, codex\./);
    usage(['claude', '--model'], /--model needs a value/);
    usage(['claude', '--usd'], /--usd needs a value/);
    usage(['claude', '--model', ''], /--model takes a model ID/);
    usage(['claude', '--model', 'a b'], /--model takes a model ID/);
    usage(['claude', '--model', 'x'.repeat(321)], /--model takes a model ID of 1 to 320/);
    for (const amount of ['-5', '-0.5', 'abc', '0', '1e3', '5$', '2000000000'])
      usage(['claude', '--usd', amount], /--usd takes a dollar amount above 0/);
    usage(['claude', '--usd=-5'], /--usd takes a dollar amount above 0 \(such as 5 or 2\.50\), not "-5"/);
    usage(['claude', '-p', 'hi'], /Unknown option -p\. Options for the agent go after `--`\./);
    usage(['claude', 'hi'], /Arguments for the agent go after `--`: switchyard launch claude -- hi/);
    usage(['claude', '--json'], /--json goes with --print-env/);
  });
});

describe('agents', () => {
  test('the table has the agents the usage names', () => {
    assert.deepEqual(AGENT_NAMES, ['claude', 'codex']);
  });

  test('Claude Code: base URL without /v1, the token as its auth token, tool search on; conflicts removed', () => {
    assert.deepEqual(AGENTS.claude.plan(CTX), {
      set: {
        ANTHROPIC_BASE_URL: 'http://127.0.0.1:3939',
        ANTHROPIC_AUTH_TOKEN: 'sk-svc-secret',
        ENABLE_TOOL_SEARCH: 'true',
      },
      unset: CLAUDE_CONFLICTS,
      args: [],
    });
  });

  test('Claude Code with --model: every model variable, the old fast-model one removed; own tool search kept', () => {
    const plan = AGENTS.claude.plan({ ...CTX, model: 'openai/gpt-5', env: { ENABLE_TOOL_SEARCH: 'false' } });
    assert.deepEqual(plan.set, {
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:3939',
      ANTHROPIC_AUTH_TOKEN: 'sk-svc-secret',
      ENABLE_TOOL_SEARCH: 'false',
      ANTHROPIC_MODEL: 'openai/gpt-5',
      ANTHROPIC_DEFAULT_OPUS_MODEL: 'openai/gpt-5',
      ANTHROPIC_DEFAULT_SONNET_MODEL: 'openai/gpt-5',
      ANTHROPIC_DEFAULT_HAIKU_MODEL: 'openai/gpt-5',
      CLAUDE_CODE_SUBAGENT_MODEL: 'openai/gpt-5',
    });
    assert.deepEqual(plan.unset, [...CLAUDE_CONFLICTS, 'ANTHROPIC_SMALL_FAST_MODEL']);
  });

  test('Codex CLI: -c overrides for a switchyard provider, the token in the variable env_key names', () => {
    const plan = AGENTS.codex.plan({ ...CTX, model: 'anthropic/claude-"q"' });
    assert.deepEqual(plan, {
      set: { SWITCHYARD_LAUNCH_TOKEN: 'sk-svc-secret' },
      unset: ['OPENAI_API_KEY', 'OPENAI_BASE_URL'],
      args: [
        '-c',
        'model_provider="switchyard"',
        '-c',
        'model_providers.switchyard.name="Switchyard"',
        '-c',
        'model_providers.switchyard.base_url="http://127.0.0.1:3939/v1"',
        '-c',
        'model_providers.switchyard.env_key="SWITCHYARD_LAUNCH_TOKEN"',
        '-c',
        'model_providers.switchyard.wire_api="responses"',
        '-c',
        'model_providers.switchyard.supports_websockets=true',
        '-c',
        'model="anthropic/claude-\\"q\\""',
      ],
    });
    assert.equal(AGENTS.codex.plan(CTX).args.length, 12, 'no model override without --model');
  });

  test("the agent's environment: the launcher's, less what the plan removes, plus what it sets", () => {
    const env = agentEnv(
      { PATH: '/bin', ANTHROPIC_API_KEY: 'sk-ant-user', ANTHROPIC_BASE_URL: 'https://api.anthropic.com' },
      AGENTS.claude.plan(CTX),
    );
    assert.deepEqual(env, {
      PATH: '/bin',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:3939',
      ANTHROPIC_AUTH_TOKEN: 'sk-svc-secret',
      ENABLE_TOOL_SEARCH: 'true',
    });
  });
});

test("the token's name: the agent and the directory's base name in safe characters, bounded", () => {
  assert.equal(tokenName('claude', '/home/me/switchyard'), 'launch claude switchyard');
  assert.equal(tokenName('codex', '/home/me/Мой проект\n$(x)'), 'launch codex _x_');
  assert.equal(tokenName('codex', '/home/me/my proj.v2'), 'launch codex my_proj.v2');
  assert.equal(tokenName('claude', '/'), 'launch claude _');
  assert.equal(tokenName('claude', `/${'a'.repeat(300)}`), `launch claude ${'a'.repeat(64)}`);
});

describe('the binary', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-launch-bin-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const write = (path: string, mode: number) => {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, '#!/bin/sh\n');
    chmodSync(path, mode);
    return path;
  };
  const notFound = (env: NodeJS.ProcessEnv, message: RegExp) =>
    assert.throws(
      () => findBinary(AGENTS.claude, env),
      (err: unknown) => err instanceof CliError && err.exitCode === 1 && message.test(err.message),
    );

  test('the first executable on PATH; a file that is not executable is passed over', () => {
    write(join(dir, 'a', 'claude'), 0o644);
    const b = write(join(dir, 'b', 'claude'), 0o755);
    assert.equal(findBinary(AGENTS.claude, { PATH: ['', 'relative', join(dir, 'a'), join(dir, 'b')].join(':') }), b);
    notFound({ PATH: join(dir, 'a') }, /Claude Code \(`claude`\) was not found on PATH\. .*SWITCHYARD_CLAUDE_BIN/);
    notFound({}, /was not found on PATH/);
  });

  test('SWITCHYARD_CLAUDE_BIN: a path, or a command on PATH; one that is neither is named', () => {
    const other = write(join(dir, 'c', 'my-claude'), 0o755);
    assert.equal(findBinary(AGENTS.claude, { SWITCHYARD_CLAUDE_BIN: other }), other);
    assert.equal(findBinary(AGENTS.claude, { SWITCHYARD_CLAUDE_BIN: 'my-claude', PATH: join(dir, 'c') }), other);
    notFound({ SWITCHYARD_CLAUDE_BIN: join(dir, 'a', 'claude') }, /names ".*", which is not an executable file\./);
    notFound({ SWITCHYARD_CLAUDE_BIN: 'nope', PATH: join(dir, 'c') }, /names "nope", which is not a command on PATH/);
    // Each agent reads its own variable.
    assert.throws(() => findBinary(AGENTS.codex, { SWITCHYARD_CLAUDE_BIN: other, PATH: join(dir, 'b') }), /`codex`/);
  });
});

test('--print-env quotes each word so that a POSIX shell reads it back as it was', () => {
  const words = ['plain', 'model="x"', "it's", 'a b', '$HOME', '`id`', 'back\\slash', 'nl\nline', '', '-c'];
  const r = spawnSync('sh', ['-c', `printf '%s\\0' ${words.map(shellWord).join(' ')}`], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.split('\0').slice(0, -1), words);
  assert.equal(shellWord('http://127.0.0.1:3939/v1'), 'http://127.0.0.1:3939/v1');
});
