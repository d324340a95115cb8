import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import type { UsageEvent, UsageReport } from '../../protocol/gateway.ts';

// Builders for usage events and a temporary data directory, shared by the meter, store and route tests.

export function report(over: Partial<UsageReport> = {}): UsageReport {
  return {
    inputTokens: 10,
    outputTokens: 5,
    cachedInputTokens: 2,
    reasoningTokens: 1,
    totalTokens: 15,
    costUsd: null,
    toolCalls: {},
    ...over,
  };
}

let seq = 0;
export function usageEvent(over: Partial<UsageEvent> = {}): UsageEvent {
  return {
    kind: 'usage',
    requestId: `req_test${seq++}`,
    at: Date.now(),
    tokenId: 'tok_a',
    providerId: 'openai',
    modelId: 'openai/gpt-4o',
    op: 'chat.completions',
    outcome: 'ok',
    usage: report(),
    ...over,
  };
}

/** Epoch milliseconds at local noon of the local day `daysAgo` days before today. */
export function localNoon(daysAgo: number): number {
  const d = new Date();
  return new Date(d.getFullYear(), d.getMonth(), d.getDate() - daysAgo, 12).getTime();
}

export function tempDataDir(dirs: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-usage-'));
  dirs.push(dir);
  return dir;
}

export function removeDirs(dirs: string[]): void {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}

/** Every byte of every file under `dir`. */
export function allBytes(dir: string): Buffer {
  const parts: Buffer[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    parts.push(statSync(path).isDirectory() ? allBytes(path) : readFileSync(path));
  }
  return Buffer.concat(parts);
}

/** A logger whose lines are parsed into `lines`. */
export function captureLog(): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n'))
        if (l !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines };
}
