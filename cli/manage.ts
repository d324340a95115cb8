import type { DeletedAnswer, ListAnswer, TokenCreated } from '../protocol/http/answers.ts';
import type { ModelView } from '../protocol/http/catalog.ts';
import type { ProviderView } from '../protocol/http/providers.ts';
import type { TokenView } from '../protocol/http/tokens.ts';
import type { TestOutcome } from '../protocol/ports/providers.ts';
import { isProviderKind, KINDS, PROVIDER_KINDS } from '../protocol/providers.ts';
import { isScope, SCOPES } from '../protocol/scopes.ts';
import { CliError, type Client, EXIT } from './client.ts';
import { relative, table, say, printJson, path } from './output.ts';
import { readSecret } from './secret.ts';
import { withArticle } from '../protocol/words.ts';

// The commands that change what the service is set up with: providers and their keys, model aliases and
// hiding, local tokens. Each is one API call (or two: read, then write), prints one line for a person or the
// API's answer with --json, and exits 1 with the service's reason when it refuses.

export interface ProviderAdd {
  kind: string;
  id?: string;
  baseUrl?: string;
  name?: string;
}

/** `providers add <kind>`: the key from a hidden prompt on a terminal, else from stdin; never from argv. */
export async function addProvider(client: Client, json: boolean, o: ProviderAdd): Promise<number> {
  if (!isProviderKind(o.kind))
    throw new CliError(`Unknown kind "${o.kind}". Kinds: ${PROVIDER_KINDS.join(', ')}.`, EXIT.usage);
  const info = KINDS[o.kind];
  const label = o.name ?? o.id ?? o.kind;
  const credential =
    info.credential === 'none'
      ? null
      : await readSecret(`API key for ${label}${info.credential === 'optional' ? ' (Enter for none)' : ''}: `);
  if (credential === null && info.credential === 'required') {
    throw new CliError(
      `${withArticle(o.kind, true)} provider needs an API key: type it at the prompt, or pipe it in on stdin.`,
      EXIT.usage,
    );
  }
  const body = {
    kind: o.kind,
    ...(o.id !== undefined && { id: o.id }),
    ...(o.baseUrl !== undefined && { baseUrl: o.baseUrl }),
    ...(o.name !== undefined && { displayName: o.name }),
    ...(credential !== null && { credential }),
  };
  const provider = await client.call<ProviderView>('POST', '/v1/providers', body);
  if (json) return (printJson(provider), 0);
  const key = provider.credentialConfigured ? 'its key stored in the vault' : 'no key';
  say(`Added provider ${provider.id} (${provider.kind}, ${provider.baseUrl ?? 'in the service'}), ${key}.`);
  say(`Its models join the catalog as ${provider.id}/<model> once listed: \`switchyard models\`.`);
  return 0;
}

export async function removeProvider(client: Client, json: boolean, id: string): Promise<number> {
  const answer = await client.call<DeletedAnswer>('DELETE', `/v1/providers/${path(id)}`);
  if (json) return (printJson(answer), 0);
  say(`Removed provider ${answer.id}.`);
  return 0;
}

export async function enableProvider(client: Client, json: boolean, id: string, enabled: boolean): Promise<number> {
  const provider = await client.call<ProviderView>('PATCH', `/v1/providers/${path(id)}`, { enabled });
  if (json) return (printJson(provider), 0);
  say(`Provider ${provider.id} is ${provider.enabled ? 'enabled' : 'disabled'}.`);
  return 0;
}

/** Lists the upstream's models without changing anything; exit 1 when that fails, with the reason. */
export async function testProvider(client: Client, json: boolean, id: string): Promise<number> {
  const outcome = await client.call<TestOutcome>('POST', `/v1/providers/${path(id)}/actions/test`);
  if (json) return (printJson(outcome), outcome.ok ? 0 : EXIT.failed);
  if (outcome.ok) {
    say(`${id}: reachable, ${outcome.modelCount} models listed in ${outcome.latencyMs} ms.`);
    return 0;
  }
  const error: Partial<NonNullable<TestOutcome['error']>> = outcome.error ?? {};
  process.stderr.write(`${id}: failed (${error.code ?? 'error'}): ${error.message ?? 'no reason given'}\n`);
  return EXIT.failed;
}

/** Adds `alias` to a model's aliases (an auto model becomes an explicit record, as PATCH does). */
export async function aliasModel(client: Client, json: boolean, alias: string, id: string): Promise<number> {
  const model = await client.call<ModelView>('GET', `/v1/catalog/models/${path(id)}`);
  const aliases: string[] = model.aliases ?? [];
  const updated = aliases.includes(alias)
    ? model
    : await client.call<ModelView>('PATCH', `/v1/catalog/models/${path(id)}`, { aliases: [...aliases, alias] });
  if (json) return (printJson(updated), 0);
  say(`${alias} now names ${updated.id}.`);
  return 0;
}

export async function hideModel(client: Client, json: boolean, id: string, hidden: boolean): Promise<number> {
  const model = await client.call<ModelView>('PATCH', `/v1/catalog/models/${path(id)}`, { hidden });
  if (json) return (printJson(model), 0);
  say(`${model.id} is ${model.hidden ? 'hidden: it leaves discovery and no longer resolves' : 'shown'}.`);
  return 0;
}

export async function listTokens(client: Client, json: boolean): Promise<number> {
  const answer = await client.call<ListAnswer<TokenView>>('GET', '/v1/tokens');
  if (json) return (printJson(answer), 0);
  process.stdout.write(
    table(
      answer.data,
      [
        { header: 'ID', value: (t) => t.id },
        { header: 'NAME', value: (t) => t.name },
        { header: 'SCOPES', value: (t) => t.scopes.join(',') },
        { header: 'PREFIX', value: (t) => t.prefix },
        { header: 'LAST USED', value: (t) => relative(t.lastUsedAt) },
        { header: 'EXPIRES', value: (t) => (t.expiresAt ? relative(t.expiresAt) : 'never') },
      ],
      'No tokens.',
    ),
  );
  return 0;
}

export function parseScopes(value: string | undefined): string[] {
  const scopes = (value ?? 'inference')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const wrong = scopes.find((s) => !isScope(s));
  if (scopes.length === 0 || wrong !== undefined)
    throw new CliError(`--scopes takes a comma-separated list of: ${SCOPES.join(', ')}.`, EXIT.usage);
  return scopes;
}

/** Prints the new secret once, on stdout, so that `$(switchyard tokens create x)` captures it. */
export async function createToken(
  client: Client,
  json: boolean,
  name: string,
  scopes: string[],
  expiresAt: string | undefined,
): Promise<number> {
  const answer = await client.call<TokenCreated>('POST', '/v1/tokens', {
    name,
    scopes,
    ...(expiresAt !== undefined && { expiresAt }),
  });
  if (json) return (printJson(answer), 0);
  process.stderr.write(
    `Created ${answer.token.id} (${answer.token.name}: ${answer.token.scopes.join(', ')}). Its secret, shown this ` +
      `once:\n`,
  );
  say(answer.secret);
  return 0;
}

export async function revokeToken(client: Client, json: boolean, id: string): Promise<number> {
  const answer = await client.call<DeletedAnswer>('DELETE', `/v1/tokens/${path(id)}`);
  if (json) return (printJson(answer), 0);
  say(`Revoked ${answer.id}: it is refused from the next request on.`);
  return 0;
}
