import type { ListAnswer, PageAnswer } from '../protocol/http/answers.ts';
import type { ModelView } from '../protocol/http/catalog.ts';
import type { ProviderView } from '../protocol/http/providers.ts';
import type { LoadedRuntimeModelList } from '../protocol/http/runtime.ts';
import type { ServiceView } from '../protocol/http/services.ts';
import type { TokenView } from '../protocol/http/tokens.ts';
import type { UsageBreakdown, UsageBreakdownRow, UsageSummary } from '../protocol/http/usage.ts';
import type { JobRecord } from '../protocol/jobs.ts';
import type { Client } from './client.ts';
import { bytes, type Column, count, relative, table, usageCost, usd, printJson } from './output.ts';

// The read-only commands: what is configured, what is loaded, what was used, what runs.

const print = (text: string) => process.stdout.write(text);

export async function providers(client: Client, json: boolean): Promise<number> {
  const answer = await client.call<ListAnswer<ProviderView>>('GET', '/v1/providers');
  if (json) return (printJson(answer), 0);
  print(
    table(
      answer.data,
      [
        { header: 'ID', value: (p) => p.id },
        { header: 'KIND', value: (p) => p.kind },
        { header: 'ENABLED', value: (p) => (p.enabled ? 'yes' : 'no') },
        { header: 'CREDENTIAL', value: (p) => (p.credentialConfigured ? 'set' : 'none') },
        { header: 'BASE URL', value: (p) => p.baseUrl },
      ],
      'No providers. Add one with `switchyard providers add <kind>` (openai, anthropic, openrouter, ' +
        'openai_compatible, ollama, llamacpp).',
    ),
  );
  return 0;
}

/** Input and output USD per million tokens, as the meter prices the model now, and by what. */
function price(m: ModelView): string {
  const p = m.effectivePricing ?? m.pricing ?? null;
  if (p === null) return 'no price';
  const per = p.currency === 'USD' ? `${usd(p.inputPerMTok)} / ${usd(p.outputPerMTok)}` : `${p.currency} set`;
  return m.pricingSource ? `${per} (${m.pricingSource})` : per;
}

/** The catalog; hidden models only with `all`. */
export async function models(client: Client, json: boolean, all: boolean): Promise<number> {
  const answer = await client.call<ListAnswer<ModelView>>(
    'GET',
    all ? '/v1/catalog/models' : '/v1/catalog/models?hidden=false',
  );
  if (json) return (printJson(answer), 0);
  const columns: Column<ModelView>[] = [
    { header: 'ID', value: (m) => m.id },
    { header: 'PROVIDER', value: (m) => m.providerId },
    { header: 'SOURCE', value: (m) => m.source },
    { header: 'CONTEXT', value: (m) => count(m.contextWindow), right: true },
    { header: 'PRICE IN / OUT PER MTOK', value: price },
    { header: 'ALIASES', value: (m) => (m.aliases ?? []).join(', ') },
    ...(all ? [{ header: 'HIDDEN', value: (m: ModelView) => (m.hidden ? 'hidden' : '') }] : []),
  ];
  print(table(answer.data, columns, 'No models. Add a provider, or put a GGUF file in the models directory.'));
  return 0;
}

/** Loaded models, as `ollama ps` shows them. */
export async function ps(client: Client, json: boolean): Promise<number> {
  const answer = await client.call<LoadedRuntimeModelList>('GET', '/v1/runtime/loaded');
  if (json) return (printJson(answer), 0);
  print(
    table(
      answer.data,
      [
        { header: 'MODEL', value: (m) => m.modelId },
        { header: 'RUNTIME', value: (m) => m.runtime },
        { header: 'SIZE', value: (m) => bytes(m.memoryBytes), right: true },
        { header: 'PROCESSOR', value: (m) => (m.placement === 'gpu' ? 'GPU' : 'CPU') },
        { header: 'CONTEXT', value: (m) => count(m.contextSize), right: true },
        { header: 'UNTIL', value: (m) => (m.expiresAt === null ? 'in use or kept' : relative(m.expiresAt)) },
      ],
      'No models loaded.',
    ),
  );
  return 0;
}

/** A breakdown row; by token, with its token's name beside the ID (null: revoked, or not readable). */
type NamedRow = UsageBreakdownRow & { tokenName?: string | null };

export const USAGE_GROUPS = ['provider', 'model', 'provider_model', 'token', 'service_account', 'credential'] as const;

/** Totals over the last `days` days, then the breakdown by `by`. */
export async function usage(
  client: Client,
  json: boolean,
  days: number,
  by: (typeof USAGE_GROUPS)[number],
): Promise<number> {
  const to = new Date();
  const from = new Date(to.getTime() - (days - 1) * 86_400_000);
  const day = (d: Date) =>
    `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
  const range = `from=${day(from)}&to=${day(to)}`;
  const [summary, breakdown, names] = await Promise.all([
    client.call<UsageSummary>('GET', `/v1/usage/summary?${range}`),
    client.call<UsageBreakdown & { data: NamedRow[] }>('GET', `/v1/usage/breakdown?${range}&groupBy=${by}`),
    by === 'token' ? tokenNames(client) : null,
  ]);
  // By token, each row carries its token's name beside the ID (null: revoked, or not readable with this token).
  // Grouped by token, every row names its token.
  if (names) for (const r of breakdown.data) r.tokenName = names.get(r.tokenId!) ?? null;
  if (json) return (printJson({ summary, breakdown }), 0);
  const t = summary.totals;
  print(
    `${summary.from} to ${summary.to}: ${count(t.requests)} requests (${count(t.failedRequests)} failed), ` +
      `${count(t.totalTokens)} tokens, ${usageCost(t)}\n\n`,
  );
  const keys: Record<string, Column<NamedRow>[]> = {
    provider: [{ header: 'PROVIDER', value: (r) => r.providerId }],
    model: [{ header: 'MODEL', value: (r) => r.modelId }],
    // Two columns, so that each model lines up under MODEL.
    provider_model: [
      { header: 'PROVIDER', value: (r) => r.providerId },
      { header: 'MODEL', value: (r) => r.modelId },
    ],
    token: [
      { header: 'TOKEN', value: (r) => (names === null ? r.tokenId : (r.tokenName ?? `${r.tokenId} (revoked)`)) },
    ],
    service_account: [{ header: 'SERVICE ACCOUNT', value: (r) => r.serviceAccountId }],
    // A key by its ID, beside its provider (`providers keys list` names it).
    credential: [
      { header: 'PROVIDER', value: (r) => r.providerId },
      { header: 'KEY', value: (r) => r.credentialId },
    ],
  };
  print(
    table(
      breakdown.data,
      [
        ...keys[by]!,
        { header: 'REQUESTS', value: (r) => count(r.requests), right: true },
        { header: 'INPUT', value: (r) => count(r.inputTokens), right: true },
        { header: 'OUTPUT', value: (r) => count(r.outputTokens), right: true },
        { header: 'TOTAL', value: (r) => count(r.totalTokens), right: true },
        { header: 'COST', value: usageCost, right: true },
      ],
      'No usage in this range.',
    ),
  );
  return 0;
}

/** Token names by ID; null when this token may not list tokens (GET /v1/tokens needs admin). */
async function tokenNames(client: Client): Promise<Map<string, string> | null> {
  try {
    const answer = await client.call<ListAnswer<TokenView>>('GET', '/v1/tokens');
    return new Map(answer.data.map((t) => [t.id, t.name]));
  } catch {
    return null;
  }
}

/** Supervised runtime processes and the embedded runtime. */
export async function services(client: Client, json: boolean): Promise<number> {
  const answer = await client.call<ListAnswer<ServiceView>>('GET', '/v1/services');
  if (json) return (printJson(answer), 0);
  print(
    table(
      answer.data,
      [
        { header: 'ID', value: (s) => s.id },
        { header: 'KIND', value: (s) => s.kind },
        {
          header: 'STATE',
          value: (s) => (s.state === 'restarting' ? `restarting ${relative(s.nextStartAt)}` : s.state),
        },
        { header: 'MODEL', value: (s) => (s.kind === 'embedded' ? `${s.loadedModels} loaded` : s.model) },
        { header: 'URL', value: (s) => s.url },
        { header: 'RESTARTS', value: (s) => count(s.restarts), right: true },
        { header: 'LAST EXIT', value: (s) => s.lastExit?.reason ?? '' },
      ],
      'No services.',
    ),
  );
  return 0;
}

export async function jobs(client: Client, json: boolean): Promise<number> {
  const answer = await client.call<PageAnswer<JobRecord>>('GET', '/v1/jobs');
  if (json) return (printJson(answer), 0);
  print(
    table(
      answer.data,
      [
        { header: 'ID', value: (j) => j.id },
        { header: 'KIND', value: (j) => j.kind },
        { header: 'SUBJECT', value: (j) => j.subject },
        { header: 'STATE', value: (j) => j.state },
        { header: 'PROGRESS', value: (j) => `${Math.floor(j.progress * 100)}%`, right: true },
        { header: 'CREATED', value: (j) => relative(j.createdAt) },
        { header: 'ERROR', value: (j) => j.error?.message ?? '' },
      ],
      'No jobs since the service started.',
    ),
  );
  return 0;
}
