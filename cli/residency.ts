import type { ModelPrefsView, ResidencyList, ResidencyMemory, ResidencyRow } from '../protocol/http/residency.ts';
import type { ModelResidency } from '../protocol/ports/runtime.ts';
import { UsageError } from './args.ts';
import type { Client } from './client.ts';
import { bytes, path, printJson, relative, say, table } from './output.ts';

// Pins and keep-alives per local model, and what holds the scheduler's memory budget (docs/api.md,
// Local-model scheduler): `models pin|unpin|keep-alive <id>` and `models resident`.

/** As the API bounds `keepAliveSeconds` (protocol/http/residency.ts): -1 never unloads, 604800 is a week. */
const KEEP_ALIVE_MIN = -1;
const KEEP_ALIVE_MAX = 604_800;

/** SECONDS of `models keep-alive`: a whole number in range, or `default` (null: runtime.keepAliveSeconds). */
export function keepAliveValue(text: string): number | null {
  if (text === 'default') return null;
  const n = /^-?\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < KEEP_ALIVE_MIN || n > KEEP_ALIVE_MAX)
    throw new UsageError(
      `SECONDS must be a whole number from ${KEEP_ALIVE_MIN} (never unload) to ${KEEP_ALIVE_MAX}, or \`default\`.`,
    );
  return n;
}

/**
 * parseArgs reads `-1` as a short option: in a models command a negative whole number is a value. Options go
 * before a `--` and the rest after it, in their order; `models` takes no option with a value, so none is split.
 */
export function negativesAsValues(args: string[]): string[] {
  const isNumber = (a: string) => /^-\d+$/.test(a);
  if (!args.some(isNumber)) return args;
  const isOption = (a: string) => a.startsWith('-') && a !== '--' && !isNumber(a);
  return [...args.filter(isOption), '--', ...args.filter((a) => !isOption(a) && a !== '--')];
}

const keepAliveWords = (s: number | null) =>
  s === null ? 'default (runtime.keepAliveSeconds)' : s === -1 ? 'never unloads' : `${s} s`;
const warmWords = (r: ResidencyRow) => (r.warm.length === 0 ? 'cold' : r.warm.join(', '));

function prefsLine({ prefs, resident }: { prefs: ModelPrefsView; resident: ResidencyRow | null }): string {
  const held = resident === null ? 'Not loaded.' : `Loaded, ${warmWords(resident)}.`;
  return `${prefs.modelId}: ${prefs.pinned ? 'pinned' : 'not pinned'}, keep-alive ${keepAliveWords(
    prefs.keepAliveSeconds,
  )}. ${held}`;
}

async function patchPrefs(client: Client, json: boolean, id: string, body: object): Promise<number> {
  const answer = await client.call<ModelResidency>('PATCH', `/v1/runtime/residency/${path(id)}`, body);
  if (json) return (printJson(answer), 0);
  say(prefsLine(answer));
  return 0;
}

/** `models pin|unpin <id>`: a pinned model is never evicted and stays loaded when idle. */
export const pinModel = (client: Client, json: boolean, id: string, pinned: boolean) =>
  patchPrefs(client, json, id, { pinned });

/** `models keep-alive <id> SECONDS|default`. */
export const keepAlive = (client: Client, json: boolean, id: string, seconds: number | null) =>
  patchPrefs(client, json, id, { keepAliveSeconds: seconds });

export function budgetLine(m: ResidencyMemory): string {
  return `Memory: held ${bytes(m.heldBytes)} of ${bytes(m.budgetBytes)} (${m.budgetSource}), ${m.queued} ${
    m.queued === 1 ? 'load' : 'loads'
  } queued.`;
}

/** `models resident`: the budget, then each resident model, as the scheduler sees it. */
export async function resident(client: Client, json: boolean): Promise<number> {
  const answer = await client.call<ResidencyList>('GET', '/v1/runtime/residency');
  if (json) return (printJson(answer), 0);
  say(budgetLine(answer.memory));
  say('');
  process.stdout.write(
    table(
      answer.data,
      [
        { header: 'MODEL', value: (r) => r.modelIds.join(', ') || r.unit },
        { header: 'RUNTIME', value: (r) => r.runtime },
        { header: 'SIZE', value: (r) => bytes(r.bytes), right: true },
        { header: 'STATE', value: (r) => r.state },
        { header: 'WARM', value: warmWords },
        { header: 'PINNED', value: (r) => (r.pinned ? 'yes' : 'no') },
        { header: 'COLD', value: (r) => relative(r.coldAt) },
      ],
      'No local model is resident.',
    ),
  );
  return 0;
}
