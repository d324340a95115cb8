import type { Agent } from './agent.ts';

// Claude Code (docs: code.claude.com, "LLM gateway configuration" and "Environment variables"). It sends
// Anthropic-style calls to ANTHROPIC_BASE_URL + /v1/messages with ANTHROPIC_AUTH_TOKEN as a bearer token.

/** `--model` names every model Claude Code may pick: the main one, each tier's default and subagents'. */
const MODEL_VARIABLES = [
  'ANTHROPIC_MODEL',
  'ANTHROPIC_DEFAULT_OPUS_MODEL',
  'ANTHROPIC_DEFAULT_SONNET_MODEL',
  'ANTHROPIC_DEFAULT_HAIKU_MODEL',
  'CLAUDE_CODE_SUBAGENT_MODEL',
] as const;

/**
 * What would send the calls elsewhere or with another credential: an API key wins over ANTHROPIC_AUTH_TOKEN
 * (sent as X-Api-Key, so the service would see no token of its own), a subscription's OAuth token, and the
 * switches to a cloud provider or to Claude's own gateway protocol (the seven that Claude Code 2.1.332 reads),
 * which ignore ANTHROPIC_BASE_URL.
 */
const CONFLICTING = [
  'ANTHROPIC_API_KEY',
  'CLAUDE_CODE_OAUTH_TOKEN',
  'CLAUDE_CODE_USE_BEDROCK',
  'CLAUDE_CODE_USE_VERTEX',
  'CLAUDE_CODE_USE_FOUNDRY',
  'CLAUDE_CODE_USE_ANTHROPIC_AWS',
  'CLAUDE_CODE_USE_ANTHROPIC_GOOGLE_CLOUD',
  'CLAUDE_CODE_USE_MANTLE',
  'CLAUDE_CODE_USE_GATEWAY',
] as const;

export const claude: Agent = {
  binary: 'claude',
  binaryEnv: 'SWITCHYARD_CLAUDE_BIN',
  title: 'Claude Code',
  plan({ baseUrl, token, model, env }) {
    return {
      set: {
        ANTHROPIC_BASE_URL: baseUrl,
        ANTHROPIC_AUTH_TOKEN: token,
        // Claude Code turns MCP tool search off behind a base URL that is not Anthropic's, "because most proxies
        // do not forward tool_reference blocks"; it documents `true` for one that does. The service relays
        // Messages bodies and the anthropic-beta header as they are; a route that refuses them makes Claude Code
        // retry without deferred tools. A value the user set is kept.
        ENABLE_TOOL_SEARCH: env.ENABLE_TOOL_SEARCH ?? 'true',
        ...(model !== null && Object.fromEntries(MODEL_VARIABLES.map((name) => [name, model]))),
      },
      // The older name of the fast model would outlive --model.
      unset: [...CONFLICTING, ...(model !== null ? ['ANTHROPIC_SMALL_FAST_MODEL'] : [])],
      args: [],
    };
  },
};
