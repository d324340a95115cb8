import type { DeletedAnswer, ListAnswer } from '../protocol/http/answers.ts';
import type { CredentialView, HeadroomFigure } from '../protocol/http/providers.ts';
import { intOption, options, positionals, str, UsageError } from './args.ts';
import { CliError, type Client, EXIT } from './client.ts';
import { cell, path, printJson, relative, say, table } from './output.ts';
import { readSecret } from './secret.ts';

// `switchyard providers keys ...`: a provider's credentials (docs/api.md, Provider credentials). A key is read
// from a hidden prompt on a terminal or from stdin, never from argv, and is never printed: lists show each
// key's ID, label, weight, state and what the key pool knows of its headroom.

export const KEYS_USAGE =
  'switchyard providers keys list <provider> | keys add <provider> --label L [--weight N] [--disabled] | ' +
  'keys remove|enable|disable <provider> <credId> [--json]';

export const KEYS_HELP = `  providers keys list <provider>
             A provider's keys: ID, label, weight, enabled, refused, headroom.
                                                                    [--json]
  providers keys add <provider> --label L
             Add a key to a provider; it is asked for (input hidden) or read from stdin.
                                                                    [--json] [--weight 1-100] [--disabled]
  providers keys remove|enable|disable <provider> <credId>
             Remove a key, or stop or start using it (enabling a refused key tries it again).`;

const base = (provider: string) => `/v1/providers/${path(provider)}/credentials`;

/** `5/100 requests`, the smaller share of requests and tokens first; `-` when the pool knows nothing. */
export function headroomWords(view: Pick<CredentialView, 'headroom' | 'coolingUntil'>): string {
  if (view.coolingUntil !== null) return `cooling until ${view.coolingUntil}`;
  const figures = [
    ['requests', view.headroom?.requests],
    ['tokens', view.headroom?.tokens],
  ].filter((f): f is [string, HeadroomFigure] => f[1] != null);
  if (figures.length === 0) return '-';
  return figures.map(([what, f]) => `${f.remaining}/${f.limit} ${what}`).join(', ');
}

async function list(client: Client, json: boolean, provider: string): Promise<number> {
  const answer = await client.call<ListAnswer<CredentialView>>('GET', base(provider));
  if (json) return (printJson(answer), 0);
  process.stdout.write(
    table(
      answer.data,
      [
        { header: 'ID', value: (c) => c.id },
        { header: 'LABEL', value: (c) => c.label },
        { header: 'WEIGHT', value: (c) => String(c.weight), right: true },
        { header: 'ENABLED', value: (c) => (c.enabled ? 'yes' : 'no') },
        { header: 'REFUSED', value: (c) => (c.rejectedAt === null ? 'no' : relative(c.rejectedAt)) },
        { header: 'HEADROOM', value: headroomWords },
      ],
      `No keys. Add one: \`switchyard providers keys add ${cell(provider)} --label NAME\`.`,
    ),
  );
  return 0;
}

async function add(
  client: Client,
  json: boolean,
  provider: string,
  o: { label?: string; weight?: string; disabled: boolean },
) {
  if (o.label === undefined || o.label === '') throw new UsageError(`--label is required. Usage: ${KEYS_USAGE}`);
  const weight = intOption(o.weight, '--weight', 1, 100, 1);
  // Asked for after the options are checked: a mistyped command does not ask for a key first.
  const credential = await readSecret(`API key for ${cell(provider)} (${cell(o.label)}): `);
  if (credential === null)
    throw new CliError('No key given: type it at the prompt, or pipe it in on stdin.', EXIT.usage);
  const body = { label: o.label, credential, weight, ...(o.disabled && { enabled: false }) };
  const added = await client.call<CredentialView>('POST', base(provider), body);
  if (json) return (printJson(added), 0);
  say(`Added key ${added.id} (${cell(added.label)}) to ${cell(provider)}, stored in the vault.`);
  return 0;
}

async function remove(client: Client, json: boolean, provider: string, id: string): Promise<number> {
  const answer = await client.call<DeletedAnswer>('DELETE', `${base(provider)}/${path(id)}`);
  if (json) return (printJson(answer), 0);
  say(`Removed key ${cell(answer.id)} from ${cell(provider)}; its vault entry is deleted.`);
  return 0;
}

async function enable(client: Client, json: boolean, provider: string, id: string, enabled: boolean) {
  const changed = await client.call<CredentialView>('PATCH', `${base(provider)}/${path(id)}`, { enabled });
  if (json) return (printJson(changed), 0);
  say(`Key ${changed.id} (${cell(changed.label)}) of ${cell(provider)} is ${enabled ? 'enabled' : 'disabled'}.`);
  return 0;
}

/** `args`: what follows `providers keys`. */
export async function providerKeys(connect: () => Client, args: string[]): Promise<number> {
  const o = options(args, { label: { type: 'string' }, weight: { type: 'string' }, disabled: { type: 'boolean' } });
  const [sub, provider, id] = positionals(o.positionals, 3, KEYS_USAGE);
  const json = o.values.json === true;
  const adding = sub === 'add';
  if (!adding && (o.values.label !== undefined || o.values.weight !== undefined || o.values.disabled !== undefined))
    throw new UsageError(`--label, --weight and --disabled go with \`keys add\`. Usage: ${KEYS_USAGE}`);
  if (provider === undefined) throw new UsageError(`Usage: ${KEYS_USAGE}`);
  if ((sub === 'list' || adding) && id === undefined) {
    if (sub === 'list') return list(connect(), json, provider);
    return add(connect(), json, provider, {
      label: str(o.values.label),
      weight: str(o.values.weight),
      disabled: o.values.disabled === true,
    });
  }
  if (id !== undefined && sub === 'remove') return remove(connect(), json, provider, id);
  if (id !== undefined && (sub === 'enable' || sub === 'disable'))
    return enable(connect(), json, provider, id, sub === 'enable');
  throw new UsageError(`Usage: ${KEYS_USAGE}`);
}
