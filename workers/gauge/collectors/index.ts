import type { GaugeCollectorId } from '../../../protocol/gauge-catalog.ts';
import type { Collector } from './types.ts';
import { collector as claudeCode } from './claude-code/index.ts';
import { collector as codex } from './codex/index.ts';
import { collector as statuspage } from './statuspage/index.ts';
import { collector as openai } from './openai/index.ts';
import { collector as anthropic } from './anthropic/index.ts';
import { collector as openrouter } from './openrouter/index.ts';
import { collector as githubCopilot } from './github-copilot/index.ts';

// The collectors the gauge worker can run, keyed by collector ID (protocol/gauge-catalog.ts). Each collector's
// folder exports `collector` and adds one line here; the registry is complete, so a collector ID without one
// does not compile.
export const COLLECTORS = {
  'claude-code': claudeCode,
  codex,
  statuspage,
  openai,
  anthropic,
  openrouter,
  'github-copilot': githubCopilot,
} satisfies Record<GaugeCollectorId, Collector>;

export function collectorOf(id: GaugeCollectorId): Collector | undefined {
  return COLLECTORS[id];
}
