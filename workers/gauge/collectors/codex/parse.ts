import { MAX_MODEL, cleanLabel, placeOf, sessionOf, type Identity } from '../local-logs/labels.ts';
import { objectLine, type Dialect, type LineSink } from '../local-logs/run.ts';
import { codexDefaultRoots } from '../local-logs/roots.ts';
import { hourOf, type Usage } from '../local-logs/tally.ts';
import { snapshotOf, type LimitSnapshot } from './limits.ts';

// One line of a Codex rollout (${CODEX_HOME:-~/.codex}/sessions/YYYY/MM/DD/rollout-*.jsonl):
// `{timestamp, type, payload}`. `session_meta` names the session and its cwd, `turn_context` the model, and
// `event_msg` with `payload.type: "token_count"` carries `info.{total_token_usage, last_token_usage}` and
// `rate_limits`. Only the first line names the session, so labels and model live in the file's memory.

export interface CodexMemory {
  session: string | null;
  project: string | null;
  workspace: string | null;
  model: string | null;
  /** The last cumulative total_token_usage: [input, cached, output, reasoning, total]. */
  last: number[] | null;
}

const TOKENS_MAX = 1e12;
const count = (v: unknown): number =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= TOKENS_MAX ? Math.floor(v) : 0;

function tokensOf(raw: unknown): number[] | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const u = raw as Record<string, unknown>;
  return [
    count(u['input_tokens']),
    count(u['cached_input_tokens']),
    count(u['output_tokens']),
    count(u['reasoning_output_tokens']),
    count(u['total_tokens']),
  ];
}

/**
 * OpenAI counts cached input inside input (split out here, as everywhere in Gauge: input excludes cache reads)
 * and reasoning inside output (kept there: output includes reasoning everywhere, reasoning is the part of it).
 */
function usageOf(t: number[]): Usage {
  const [input = 0, cached = 0, output = 0, reasoning = 0] = t;
  const cacheRead = Math.min(cached, input);
  return { input: input - cacheRead, output, cacheRead, cacheWrite: 0, reasoning: Math.min(reasoning, output) };
}

function restoreMemory(raw: unknown): CodexMemory {
  const fresh: CodexMemory = { session: null, project: null, workspace: null, model: null, last: null };
  if (typeof raw !== 'object' || raw === null) return fresh;
  const m = raw as Record<string, unknown>;
  const s = (v: unknown, max: number): string | null => (typeof v === 'string' && v.length <= max ? v : null);
  const last =
    Array.isArray(m['last']) && m['last'].length === 5 && m['last'].every((n) => typeof n === 'number' && n >= 0)
      ? (m['last'] as number[])
      : null;
  return {
    session: s(m['session'], 96),
    project: s(m['project'], 64),
    workspace: s(m['workspace'], 16),
    model: s(m['model'], MAX_MODEL),
    last,
  };
}

export function createCodexDialect(onLimits: (snapshot: LimitSnapshot) => void): Dialect<CodexMemory> {
  function line(text: string, memory: CodexMemory, sink: LineSink, identity: Identity): void {
    const parsed = objectLine(text, sink);
    if (parsed === null) return;
    const { type, payload, timestamp } = parsed;
    if (typeof payload !== 'object' || payload === null) return;
    const p = payload as Record<string, unknown>;
    if (type === 'session_meta') {
      memory.session = sessionOf(p['id']);
      Object.assign(memory, placeOf(p['cwd'], identity));
      return;
    }
    if (type === 'turn_context') {
      memory.model = cleanLabel(p['model'], MAX_MODEL) ?? memory.model;
      return;
    }
    if (type !== 'event_msg' || p['type'] !== 'token_count') return;
    const at = typeof timestamp === 'string' ? Date.parse(timestamp) : Number.NaN;
    if (Number.isNaN(at)) {
      sink.malformed();
      return;
    }
    const limits = snapshotOf(p['rate_limits'], at);
    if (limits !== null) onLimits(limits);
    const info = p['info'];
    if (typeof info !== 'object' || info === null) return;
    const total = tokensOf((info as Record<string, unknown>)['total_token_usage']);
    const last = tokensOf((info as Record<string, unknown>)['last_token_usage']);
    // Codex repeats a token_count event (same cumulative total) when only the rate limits changed: the
    // cumulative total is the event's identity within its session.
    if (total !== null && memory.last !== null && total.every((n, i) => n === memory.last![i])) {
      sink.duplicate();
      return;
    }
    let delta = last;
    if (delta === null && total !== null)
      delta = memory.last === null ? total : total.map((n, i) => Math.max(0, n - (memory.last![i] ?? 0)));
    if (total !== null) memory.last = total;
    if (delta === null || delta.slice(0, 4).every((n) => n === 0)) return;
    sink.count(
      null,
      {
        hour: hourOf(at),
        model: memory.model,
        project: memory.project,
        workspace: memory.workspace,
        session: memory.session,
      },
      usageOf(delta),
    );
  }

  return {
    matches: (name) => name.startsWith('rollout-') && name.endsWith('.jsonl'),
    defaultRoots: codexDefaultRoots,
    memory: restoreMemory,
    line,
  };
}
