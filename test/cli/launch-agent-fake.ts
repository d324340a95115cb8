import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// A stand-in for Claude Code and Codex CLI that `switchyard launch` starts (test/cli/launch-run.suite.ts): one
// Node script written as `claude` and as `codex` into a directory the test puts on PATH. It records its
// arguments and environment, makes one real call through the service the way its agent does (Claude Code:
// POST <ANTHROPIC_BASE_URL>/v1/messages with ANTHROPIC_AUTH_TOKEN; Codex: POST <base_url>/responses with the
// variable env_key names, both read from its -c overrides), then exits with `--fake-exit N`, or with
// `--fake-wait` prints `ready` and waits for a signal, which it records before dying of it.

export interface FakeAgentRecord {
  name: 'claude' | 'codex';
  argv: string[];
  env: Record<string, string>;
  call: { url: string; status: number; body: unknown } | null;
  signals: string[];
}

const SCRIPT = String.raw`
'use strict';
const { writeFileSync } = require('node:fs');
const { basename } = require('node:path');
const name = basename(process.argv[1]);
const argv = process.argv.slice(2);
const record = { name, argv, env: { ...process.env }, call: null, signals: [] };
const save = () => writeFileSync(process.env.FAKE_AGENT_RECORD, JSON.stringify(record));
const flag = (f) => { const i = argv.indexOf(f); return i < 0 ? undefined : argv[i + 1]; };
// Codex's -c key=value, the value read as TOML; the launcher writes TOML strings as JSON does.
const config = (key) => {
  for (let i = 0; i < argv.length - 1; i++)
    if (argv[i] === '-c' && argv[i + 1].startsWith(key + '=')) return JSON.parse(argv[i + 1].slice(key.length + 1));
  return undefined;
};
async function call() {
  let url, token, body;
  if (name === 'claude') {
    url = process.env.ANTHROPIC_BASE_URL + '/v1/messages';
    token = process.env.ANTHROPIC_AUTH_TOKEN;
    body = { model: process.env.ANTHROPIC_MODEL ?? 'claude-sonnet-4-5', max_tokens: 64,
      messages: [{ role: 'user', content: 'Say hello.' }] };
  } else {
    url = config('model_providers.switchyard.base_url') + '/responses';
    token = process.env[config('model_providers.switchyard.env_key')];
    body = { model: config('model') ?? 'gpt-5-codex', input: 'Say hello.' };
  }
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: 'Bearer ' + token,
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
    },
    body: JSON.stringify(body),
  });
  record.call = { url, status: res.status, body: await res.json() };
}
call().then(() => {
  save();
  if (!argv.includes('--fake-wait')) process.exit(Number(flag('--fake-exit') ?? 0));
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'])
    process.once(signal, () => {
      record.signals.push(signal);
      save();
      process.kill(process.pid, signal);
    });
  // Bounded: a test that failed before signalling leaves no process behind for long.
  setTimeout(() => process.exit(98), 60000);
  process.stdout.write('ready\n');
}, (err) => {
  record.call = { url: '', status: 0, body: String(err) };
  save();
  process.exit(99);
});
`;

/** Writes `claude` and `codex` into `dir`; returns it. */
export function writeFakeAgents(dir: string): string {
  mkdirSync(dir, { recursive: true });
  for (const name of ['claude', 'codex']) {
    const file = join(dir, name);
    writeFileSync(file, `#!${process.execPath}\n${SCRIPT}`);
    chmodSync(file, 0o755);
  }
  return dir;
}

export const readRecord = (file: string): FakeAgentRecord => JSON.parse(readFileSync(file, 'utf8'));
