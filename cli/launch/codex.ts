import type { Agent } from './agent.ts';

// Codex CLI ignores OPENAI_BASE_URL: a model provider of its configuration says where it calls. `-c key=value`
// overrides (the value read as TOML) give it one for this run without a file; Codex reads the token from the
// variable that `env_key` names and sends it as a bearer token.

/** The variable that carries the run's token to Codex. */
export const CODEX_TOKEN_ENV = 'SWITCHYARD_LAUNCH_TOKEN';

/** A TOML basic string: JSON's escapes (`\"`, `\\`, `\n`, `\uXXXX`) are TOML's too. */
const toml = (value: string) => JSON.stringify(value);

export const codex: Agent = {
  binary: 'codex',
  binaryEnv: 'SWITCHYARD_CODEX_BIN',
  title: 'Codex CLI',
  plan({ baseUrl, token, model }) {
    const overrides = [
      `model_provider=${toml('switchyard')}`,
      `model_providers.switchyard.name=${toml('Switchyard')}`,
      `model_providers.switchyard.base_url=${toml(`${baseUrl}/v1`)}`,
      `model_providers.switchyard.env_key=${toml(CODEX_TOKEN_ENV)}`,
      `model_providers.switchyard.wire_api=${toml('responses')}`,
      'model_providers.switchyard.supports_websockets=true',
      ...(model !== null ? [`model=${toml(model)}`] : []),
    ];
    return {
      set: { [CODEX_TOKEN_ENV]: token },
      unset: ['OPENAI_API_KEY', 'OPENAI_BASE_URL'],
      // `codex -c ... exec ...`: Codex takes its global options before a subcommand, and hands them to it.
      args: overrides.flatMap((o) => ['-c', o]),
    };
  },
};
