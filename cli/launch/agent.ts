// What `switchyard launch` knows of one agent: where its binary is and how to point it at the service. Each
// agent is one file beside this one, a pure function of the run's context, so the launcher stays generic and a
// later option (an MCP endpoint, a session label, a route) is a field of the context that the agents read.

/** What a run of `launch` has for the agent to use. */
export interface LaunchContext {
  /** The service's root URL, without `/v1` (`http://127.0.0.1:3939`). */
  baseUrl: string;
  /** The run's token secret. */
  token: string;
  /** `--model`: the model the agent asks for, or null for the agent's own default. */
  model: string | null;
  /** The environment `launch` was started with: a value the user set there may be kept. */
  env: Readonly<Record<string, string | undefined>>;
}

/** How the agent is started: variables set and removed, arguments placed before the user's own. */
export interface AgentPlan {
  set: Readonly<Record<string, string>>;
  unset: readonly string[];
  args: readonly string[];
}

export interface Agent {
  /** The command on PATH. */
  binary: string;
  /** The variable that names another binary (a path, or a command looked up on PATH). */
  binaryEnv: string;
  /** For people: "Claude Code". */
  title: string;
  plan(ctx: LaunchContext): AgentPlan;
}
