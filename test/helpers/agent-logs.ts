import { appendFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { CollectContext } from '../../workers/gauge/collectors/types.ts';

// Log trees the way Claude Code and Codex write them, in temporary directories: transcript lines with the
// fields the agents really write (recorded shapes, trimmed of message content), plus helpers to append,
// half-write and replace files the way a running agent or a log rotation would.

export const IDENTITY = { home: '/home/alice', user: 'alice' };

export function tempTree(dirs: string[], prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `switchyard-${prefix}-`));
  dirs.push(dir);
  return dir;
}

export function removeTrees(dirs: string[]): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Writes lines (objects are JSON-encoded, strings written as they are) and sets the file's mtime. */
export function writeLog(path: string, lines: (object | string)[], mtimeMs: number): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l)) + '\n').join(''));
  utimesSync(path, mtimeMs / 1000, mtimeMs / 1000);
}

/** Appends `text` as is (no newline added) and returns its byte length. */
export function appendRaw(path: string, text: string): number {
  appendFileSync(path, text);
  return Buffer.byteLength(text);
}

export const line = (value: object): string => JSON.stringify(value) + '\n';

export function context(accountId: string, config: Record<string, unknown>, now: Date, state: unknown): CollectContext {
  return { accountId, credential: null, config, signal: new AbortController().signal, now: () => now, state };
}

export interface ClaudeUsage {
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
}

/** An assistant line of a Claude Code transcript. */
export function claudeAssistant(o: {
  id?: string;
  requestId?: string;
  uuid: string;
  model: string;
  at: string;
  session: string;
  cwd: string;
  usage: ClaudeUsage;
  stop?: string | null;
}): object {
  return {
    parentUuid: null,
    isSidechain: false,
    userType: 'external',
    cwd: o.cwd,
    sessionId: o.session,
    version: '2.0.49',
    gitBranch: 'main',
    ...(o.requestId !== undefined ? { requestId: o.requestId } : {}),
    type: 'assistant',
    uuid: o.uuid,
    timestamp: o.at,
    message: {
      ...(o.id !== undefined ? { id: o.id } : {}),
      type: 'message',
      role: 'assistant',
      model: o.model,
      content: [{ type: 'text', text: 'Done.' }],
      stop_reason: o.stop === undefined ? 'end_turn' : o.stop,
      stop_sequence: null,
      usage: {
        input_tokens: o.usage.input,
        cache_creation_input_tokens: o.usage.cacheWrite,
        cache_read_input_tokens: o.usage.cacheRead,
        cache_creation: { ephemeral_5m_input_tokens: o.usage.cacheWrite, ephemeral_1h_input_tokens: 0 },
        output_tokens: o.usage.output,
        service_tier: 'standard',
      },
    },
  };
}

export function claudeUser(o: { uuid: string; at: string; session: string; cwd: string }): object {
  return {
    parentUuid: null,
    isSidechain: false,
    userType: 'external',
    cwd: o.cwd,
    sessionId: o.session,
    version: '2.0.49',
    type: 'user',
    uuid: o.uuid,
    timestamp: o.at,
    message: { role: 'user', content: 'Please fix the tests.' },
  };
}

export interface CodexTokens {
  input: number;
  cached: number;
  output: number;
  reasoning: number;
}

const tokens = (t: CodexTokens) => ({
  input_tokens: t.input,
  cached_input_tokens: t.cached,
  output_tokens: t.output,
  reasoning_output_tokens: t.reasoning,
  total_tokens: t.input + t.output,
});

export function codexMeta(o: { id: string; at: string; cwd: string }): object {
  return {
    timestamp: o.at,
    type: 'session_meta',
    payload: {
      id: o.id,
      timestamp: o.at,
      cwd: o.cwd,
      originator: 'codex_cli_rs',
      cli_version: '0.58.0',
      instructions: null,
      source: 'cli',
      model_provider: 'openai',
    },
  };
}

export function codexTurn(o: { at: string; model: string; cwd: string }): object {
  return {
    timestamp: o.at,
    type: 'turn_context',
    payload: {
      cwd: o.cwd,
      approval_policy: 'on-request',
      sandbox_policy: { mode: 'workspace-write' },
      model: o.model,
      effort: 'medium',
      summary: 'auto',
    },
  };
}

export interface CodexWindow {
  used: number;
  minutes: number;
  resetsAt?: number;
  resetsIn?: number;
}

const rateWindow = (w: CodexWindow) => ({
  used_percent: w.used,
  window_minutes: w.minutes,
  ...(w.resetsAt !== undefined ? { resets_at: w.resetsAt } : {}),
  ...(w.resetsIn !== undefined ? { resets_in_seconds: w.resetsIn } : {}),
});

export function codexTokenCount(o: {
  at: string;
  total?: CodexTokens;
  last?: CodexTokens;
  primary?: CodexWindow;
  secondary?: CodexWindow;
}): object {
  const info =
    o.total === undefined && o.last === undefined
      ? null
      : {
          ...(o.total !== undefined ? { total_token_usage: tokens(o.total) } : {}),
          ...(o.last !== undefined ? { last_token_usage: tokens(o.last) } : {}),
          model_context_window: 272000,
        };
  const rateLimits =
    o.primary === undefined && o.secondary === undefined
      ? null
      : {
          ...(o.primary !== undefined ? { primary: rateWindow(o.primary) } : {}),
          ...(o.secondary !== undefined ? { secondary: rateWindow(o.secondary) } : {}),
        };
  return { timestamp: o.at, type: 'event_msg', payload: { type: 'token_count', info, rate_limits: rateLimits } };
}
