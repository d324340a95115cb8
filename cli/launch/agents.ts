import type { Agent } from './agent.ts';
import { claude } from './claude.ts';
import { codex } from './codex.ts';

// The agents `switchyard launch` starts, by the name typed after it.

export const AGENTS = { claude, codex } satisfies Record<string, Agent>;
export type AgentName = keyof typeof AGENTS;
export const AGENT_NAMES = Object.keys(AGENTS) as AgentName[];

export const isAgentName = (name: string): name is AgentName => Object.hasOwn(AGENTS, name);
