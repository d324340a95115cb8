import type { ReplayAnswer, ReplayCall, RequestLogEntry, RequestLogPage } from '../protocol/http/request-log.ts';
import { UsageError } from './args.ts';
import type { Client } from './client.ts';
import { cell, count, cost, path, printJson, relative, say, table } from './output.ts';

// `switchyard requests`: the request log (docs/api.md, Request log; it needs an admin token and the log on), newest
// first, filtered as GET /v1/requests filters; `requests show ID` prints one entry with its bodies.

export const REPLAY_USAGE = 'switchyard replay <id> --model M [--json]';

export const REQUESTS_USAGE =
  'switchyard requests [--session S] [--model M] [--status ok|failed|aborted|CODE] [--limit N] [--json] | ' +
  'requests show <id> [--json]';

export interface RequestsFilter {
  session?: string;
  model?: string;
  status?: string;
  limit: number;
}

const STATUS = /^(ok|failed|aborted|[1-5]\d\d)$/;

/** Checked before the service is looked for: a typo is a usage error, never a request. */
export function requestsQuery(f: RequestsFilter): string {
  if (f.status !== undefined && !STATUS.test(f.status))
    throw new UsageError('--status must be ok, failed, aborted or an HTTP status such as 502.');
  const q = new URLSearchParams({ limit: String(f.limit) });
  if (f.session !== undefined) q.set('session', f.session);
  if (f.model !== undefined) q.set('model', f.model);
  if (f.status !== undefined) q.set('status', f.status);
  return q.toString();
}

const ms = (n: number | null) => (n === null ? '-' : `${n} ms`);

export async function listRequests(client: Client, json: boolean, query: string): Promise<number> {
  const page = await client.call<RequestLogPage>('GET', `/v1/requests?${query}`);
  if (json) return (printJson(page), 0);
  process.stdout.write(
    table(
      page.data,
      [
        { header: 'ID', value: (r) => r.id },
        { header: 'WHEN', value: (r) => relative(r.receivedAt) },
        { header: 'OP', value: (r) => r.op },
        { header: 'MODEL', value: (r) => r.clientModel ?? r.modelId ?? '-' },
        { header: 'SESSION', value: (r) => r.session ?? '-' },
        { header: 'OUTCOME', value: (r) => (r.errorCode === null ? r.outcome : `${r.outcome} ${r.errorCode}`) },
        { header: 'STATUS', value: (r) => String(r.status), right: true },
        { header: 'FIRST BYTE', value: (r) => ms(r.firstByteMs), right: true },
        { header: 'DURATION', value: (r) => ms(r.durationMs), right: true },
        { header: 'TOKENS', value: (r) => count(r.usage?.totalTokens), right: true },
      ],
      'No requests logged. The log is off unless `requestLog.enabled` or `requestLog.tokenIds` is set.',
    ),
  );
  if (page.nextCursor !== null) say(`(more: GET /v1/requests?cursor=${page.nextCursor})`);
  return 0;
}

/** A body's text, its lines kept and every other control character shown as `?` (as cell does). */
function body(label: string, b: RequestLogEntry['request']['body']): string[] {
  const note = b.omitted ?? (b.truncated ? `first part of ${b.bytes} bytes` : `${b.bytes} bytes`);
  const text = b.text === null ? '(not kept)' : b.text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '?');
  return [`${label} (${note}):`, text];
}

export async function showRequest(client: Client, json: boolean, id: string): Promise<number> {
  const e = await client.call<RequestLogEntry>('GET', `/v1/requests/${path(id)}`);
  if (json) return (printJson(e), 0);
  const lines = [
    `${e.id}  ${e.method} ${e.path}${e.query ? `?${e.query}` : ''}  ${e.op}`,
    `received ${e.receivedAt}, first byte ${ms(e.firstByteMs)}, took ${ms(e.durationMs)}`,
    `model ${e.clientModel ?? '-'} -> ${e.modelId ?? '-'} (provider ${e.providerId}, key ${e.credentialId ?? '-'})`,
    `token ${e.tokenId}, session ${e.session ?? '-'}`,
    `outcome ${e.outcome}, status ${e.status}${e.error ? `, ${e.error.code}: ${e.error.message}` : ''}`,
    `usage ${count(e.usage?.inputTokens)} in / ${count(e.usage?.outputTokens)} out, cost ${cost(e.costUsd)}`,
    'request headers:',
    ...Object.entries(e.request.headers).map(([k, v]) => `  ${k}: ${cell(v)}`),
    ...body('request body', e.request.body),
    'response headers:',
    ...Object.entries(e.response.headers).map(([k, v]) => `  ${k}: ${cell(v)}`),
    ...body('response body', e.response.body),
  ];
  for (const line of lines) say(line);
  return 0;
}

const side = (label: string, c: ReplayCall) =>
  `${label} ${c.model ?? '-'} -> ${c.modelId ?? '-'}: ${count(c.usage?.inputTokens)} in / ` +
  `${count(c.usage?.outputTokens)} out, cost ${cost(c.estimatedCostUsd)}`;
const signed = (n: number | null, show: (n: number) => string) =>
  n === null ? '-' : `${n >= 0 ? '+' : '-'}${show(Math.abs(n))}`;

/** `switchyard replay ID --model M`: the logged call again on another model, and what changed. */
export async function replayRequest(client: Client, json: boolean, id: string, model: string): Promise<number> {
  const r = await client.call<ReplayAnswer>('POST', `/v1/requests/${path(id)}/replay`, { model });
  if (json) return (printJson(r), 0);
  const d = r.difference;
  for (const line of [
    side('original', r.original),
    `${side('replay  ', r.replay)} (status ${r.replay.status}, ${r.replayRequestId})`,
    `difference: ${signed(d.inputTokens, count)} in / ${signed(d.outputTokens, count)} out, cost ` +
      signed(d.estimatedCostUsd, cost),
  ])
    say(line);
  return 0;
}
