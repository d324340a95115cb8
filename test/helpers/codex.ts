import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// Codex CLI 0.171's first POST /v1/responses of two turns, as recorded against a loopback server
// (test/fixtures/translate/codex/): turn 1 a new task, turn 2 after one function call and its output. Long
// instruction and description texts are shortened; everything else is as Codex sent it.

type Json = Record<string, any>;

export interface CodexRequest {
  method: string;
  url: string;
  /** Codex's headers, without its key, host, length and encodings. */
  headers: Record<string, string>;
  body: Json;
}

export function codexRequest(turn: 1 | 2): CodexRequest {
  const file = join(import.meta.dirname, `../fixtures/translate/codex/turn-${turn}.json`);
  return JSON.parse(readFileSync(file, 'utf8')) as CodexRequest;
}

/** The body alone, a fresh copy each time. */
export const codexTurn = (turn: 1 | 2): Json => codexRequest(turn).body;
