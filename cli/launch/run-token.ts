import type { TokenCreated } from '../../protocol/http/answers.ts';
import type { LimitRecord } from '../../protocol/http/limits.ts';
import type { TokenView } from '../../protocol/http/tokens.ts';
import { type Client, CliError, EXIT } from '../client.ts';
import { path, usd } from '../output.ts';

// The token of one `launch` run, through the service's API: minted with a short expiry, its expiry moved
// forward on a timer while the agent runs, revoked with its dollar limit when the agent is done. A run whose
// launcher is killed leaves a token that expires on its own within one lifetime.

export interface RunTokenOptions {
  client: Client;
  name: string;
  /** How long the token lives from its minting and from each extension. */
  lifetimeMs: number;
  /** `--usd`: a dollar limit on the token, or null. */
  usd: number | null;
  /** Where warnings go (stderr). */
  warn(line: string): void;
}

export interface RunToken {
  token: TokenView;
  secret: string;
  limit: LimitRecord | null;
  /**
   * Moves the expiry forward every `everyMs`, on a timer that does not keep the process alive. A failed
   * extension warns and the next tick tries again; one still under way when the next is due skips it.
   */
  keepAlive(everyMs: number): void;
  /** Stops the timer, revokes the token and removes its limit; says on stderr what failed. */
  end(): Promise<void>;
}

/** A dollar limit covers the whole run: `month` is the longest calendar window (docs/api.md, Limits). */
export const LIMIT_WINDOW = 'month';

/** How long the end waits for each answer: a service that hangs must not keep the agent's exit waiting. */
const END_WAIT_MS = 5_000;

const reason = (err: unknown) => (err instanceof Error ? err.message : String(err));

function bounded<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${END_WAIT_MS / 1000} s`)), END_WAIT_MS);
    timer.unref();
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Mints the token (and its limit); a limit the service refuses revokes the token again. */
export async function mintRunToken(o: RunTokenOptions): Promise<RunToken> {
  const expiry = () => new Date(Date.now() + o.lifetimeMs).toISOString();
  const created = await o.client.call<TokenCreated>('POST', '/v1/tokens', {
    name: o.name,
    scopes: ['inference'],
    expiresAt: expiry(),
  });
  const { token, secret } = created;
  const revoke = () => o.client.call('DELETE', `/v1/tokens/${path(token.id)}`);
  let limit: LimitRecord | null = null;
  if (o.usd !== null) {
    try {
      limit = await o.client.call<LimitRecord>('POST', '/v1/limits', {
        name: `${o.name} (${usd(o.usd)})`,
        scope: { kind: 'token', id: token.id },
        window: LIMIT_WINDOW,
        metric: 'usd',
        max: o.usd,
      });
    } catch (err) {
      await revoke().catch(() => undefined);
      throw new CliError(
        `Could not set the --usd limit: ${reason(err)}`,
        err instanceof CliError ? err.exitCode : EXIT.failed,
      );
    }
  }

  let timer: NodeJS.Timeout | null = null;
  let extending: Promise<void> | null = null;
  let expiresAt = token.expiresAt;
  const extend = async () => {
    try {
      const updated = await o.client.call<TokenView>('PATCH', `/v1/tokens/${path(token.id)}`, { expiresAt: expiry() });
      expiresAt = updated.expiresAt;
    } catch (err) {
      o.warn(
        `could not extend token ${token.id} (${reason(err)}); trying again on the next tick. Unless it is ` +
          `extended it expires at ${expiresAt}.`,
      );
    }
  };

  return {
    token,
    secret,
    limit,
    keepAlive(everyMs) {
      timer = setInterval(() => {
        extending ??= extend().finally(() => (extending = null));
      }, everyMs);
      timer.unref();
    },
    async end() {
      if (timer !== null) clearInterval(timer);
      await bounded(extending ?? Promise.resolve()).catch(() => undefined);
      try {
        await bounded(revoke());
      } catch (err) {
        o.warn(`could not revoke token ${token.id} (${reason(err)}); it expires on its own at ${expiresAt}.`);
      }
      if (limit === null) return;
      try {
        await bounded(o.client.call('DELETE', `/v1/limits/${path(limit.id)}`));
      } catch (err) {
        o.warn(`could not remove limit ${limit.id} (${reason(err)}): \`switchyard limits remove ${limit.id}\`.`);
      }
    },
  };
}
