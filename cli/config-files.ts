import type { DeletedSlugAnswer, ListAnswer } from '../protocol/http/answers.ts';
import type { PresetView } from '../protocol/http/presets.ts';
import type { RoutePackView } from '../protocol/http/route-packs.ts';
import { readBodyFile } from './body-file.ts';
import type { Client } from './client.ts';
import { table, say, printJson, path } from './output.ts';
import { familyWords } from '../protocol/words.ts';

// Presets and route packs: listed as tables, added from a JSON or YAML file holding the API's create body
// (docs/api.md, Presets and Route packs), removed by slug. The service checks the body; its refusal (a model
// that does not resolve, a taken slug) is exit 1 with its message.

export async function listPresets(client: Client, json: boolean): Promise<number> {
  const answer = await client.call<ListAnswer<PresetView>>('GET', '/v1/presets');
  if (json) return (printJson(answer), 0);
  process.stdout.write(
    table(
      answer.data,
      [
        { header: 'SLUG', value: (p) => p.slug },
        { header: 'NAME', value: (p) => p.displayName },
        { header: 'MODEL', value: (p) => p.model },
        { header: 'FOR', value: (p) => (p.familyScope ?? []).map(familyWords).join(', ') },
        { header: 'PARAMETERS', value: (p) => Object.keys(p.parameters ?? {}).join(', ') },
        { header: 'SYSTEM', value: (p) => (p.system ? 'yes' : '') },
      ],
      'No presets. Add one from a JSON or YAML file: `switchyard presets add <file>` (docs/api.md, Presets).',
    ),
  );
  return 0;
}

export async function addPreset(client: Client, json: boolean, file: string): Promise<number> {
  const body = await readBodyFile(file);
  const preset = await client.call<PresetView>('POST', '/v1/presets', body);
  if (json) return (printJson(preset), 0);
  say(`Added preset ${preset.slug} (${preset.model}); call it as the model @preset/${preset.slug}.`);
  return 0;
}

export async function removePreset(client: Client, json: boolean, slug: string): Promise<number> {
  const answer = await client.call<DeletedSlugAnswer>('DELETE', `/v1/presets/${path(slug)}`);
  if (json) return (printJson(answer), 0);
  say(`Removed preset ${answer.slug}.`);
  return 0;
}

export async function listRoutePacks(client: Client, json: boolean): Promise<number> {
  const answer = await client.call<ListAnswer<RoutePackView>>('GET', '/v1/route-packs');
  if (json) return (printJson(answer), 0);
  process.stdout.write(
    table(
      answer.data,
      [
        { header: 'SLUG', value: (p) => p.slug },
        { header: 'NAME', value: (p) => p.displayName },
        { header: 'STRATEGY', value: (p) => p.strategy },
        { header: 'ROUTES', value: (p) => (p.routes ?? []).map((r) => r.model).join(', ') },
        { header: 'FALLBACK', value: (p) => p.fallback?.model },
        { header: 'ATTEMPTS', value: (p) => String(p.maxAttempts), right: true },
      ],
      'No route packs. Add one from a JSON or YAML file: `switchyard route-packs add <file>` (docs/api.md, ' +
        'Route packs).',
    ),
  );
  return 0;
}

export async function addRoutePack(client: Client, json: boolean, file: string): Promise<number> {
  const body = await readBodyFile(file);
  const pack = await client.call<RoutePackView>('POST', '/v1/route-packs', body);
  if (json) return (printJson(pack), 0);
  const n = pack.routes.length;
  say(
    `Added route pack ${pack.slug} (${pack.strategy}, ${n} route${n === 1 ? '' : 's'}, ` +
      `fallback ${pack.fallback.model}); call it as the model @route/${pack.slug}.`,
  );
  return 0;
}

export async function removeRoutePack(client: Client, json: boolean, slug: string): Promise<number> {
  const answer = await client.call<DeletedSlugAnswer>('DELETE', `/v1/route-packs/${path(slug)}`);
  if (json) return (printJson(answer), 0);
  say(`Removed route pack ${answer.slug}.`);
  return 0;
}
