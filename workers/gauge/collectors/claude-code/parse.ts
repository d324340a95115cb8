import { MAX_MODEL, cleanLabel, placeOf, sessionOf, type Identity } from '../local-logs/labels.ts';
import { objectLine, type Dialect, type LineSink } from '../local-logs/run.ts';
import { claudeDefaultRoots } from '../local-logs/roots.ts';
import { hourOf, type Usage } from '../local-logs/tally.ts';

// One line of a Claude Code transcript (~/.claude/projects/<project>/<session>.jsonl): an assistant line
// carries `message.{id, model, usage}` with Anthropic's additive usage (input excludes cache reads and
// writes), plus `timestamp`, `sessionId`, `cwd`, `requestId`. Other lines (user, summary, snapshots) carry
// no usage and are passed over.

const MAX_TOKENS = 1e10;

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= MAX_TOKENS
    ? Math.floor(value)
    : 0;
}

/**
 * Cache writes: the total where the line has it; else the sum of the split by lifetime
 * (`cache_creation: {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}`), which some lines carry alone.
 */
function cacheWriteOf(u: Record<string, unknown>): number {
  if (typeof u['cache_creation_input_tokens'] === 'number') return count(u['cache_creation_input_tokens']);
  const split = u['cache_creation'];
  if (typeof split !== 'object' || split === null) return 0;
  const parts = split as Record<string, unknown>;
  return count(parts['ephemeral_5m_input_tokens']) + count(parts['ephemeral_1h_input_tokens']);
}

/**
 * The dedupe key: the API's message ID, unique per response. requestId is not part of it: copies of a line
 * in a resumed session sometimes lack it, and a key that needs it would count them again. A line with no
 * message ID falls back to its own line UUID, which copies keep.
 */
function idOf(line: Record<string, unknown>, message: Record<string, unknown>): string | null {
  if (typeof message['id'] === 'string' && message['id'] !== '' && message['id'].length <= 200)
    return `m:${message['id']}`;
  if (typeof line['uuid'] === 'string' && line['uuid'] !== '' && line['uuid'].length <= 200) return `u:${line['uuid']}`;
  return null;
}

function handle(text: string, sink: LineSink, identity: Identity): void {
  const line = objectLine(text, sink);
  if (line === null) return;
  const message = line['message'];
  if (typeof message !== 'object' || message === null) return;
  const { usage, model } = message as Record<string, unknown>;
  if (typeof usage !== 'object' || usage === null) return;
  // Error placeholders Claude Code writes itself cost nothing.
  if (line['isApiErrorMessage'] === true || model === '<synthetic>') return;
  const at = typeof line['timestamp'] === 'string' ? Date.parse(line['timestamp']) : Number.NaN;
  if (Number.isNaN(at)) {
    sink.malformed();
    return;
  }
  const u = usage as Record<string, unknown>;
  const counted: Usage = {
    input: count(u['input_tokens']),
    output: count(u['output_tokens']),
    cacheRead: count(u['cache_read_input_tokens']),
    cacheWrite: cacheWriteOf(u),
    reasoning: 0,
  };
  const place = placeOf(line['cwd'], identity);
  sink.count(
    idOf(line, message as Record<string, unknown>),
    { hour: hourOf(at), model: cleanLabel(model, MAX_MODEL), ...place, session: sessionOf(line['sessionId']) },
    counted,
  );
}

export const claudeDialect: Dialect<undefined> = {
  matches: (name) => name.endsWith('.jsonl'),
  defaultRoots: claudeDefaultRoots,
  memory: () => undefined,
  line: (text, _memory, sink, identity) => handle(text, sink, identity),
};
