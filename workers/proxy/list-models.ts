import { Agent, request, type Dispatcher } from 'undici';
import { ServiceError } from '../../protocol/errors.ts';
import type { UpstreamModel } from '../../protocol/providers.ts';
import { ADAPTERS } from './providers/index.ts';
import { unexpectedShape } from './providers/shape.ts';
import type { HttpRequestSpec, ModelListAdapter, ProviderTarget } from './providers/types.ts';
import { readText } from '../shared/read-text.ts';
import { fromTransportError, fromUpstreamStatus, type UpstreamContext } from '../shared/upstream-errors.ts';

// Bounds against a provider that never ends its list: a cursor that loops, or a body that keeps coming.
// 50 pages of Anthropic's 1,000 is far beyond any real account.
const MAX_PAGES = 50;
const MAX_LIST_BYTES = 64 * 1024 * 1024;
// Only the first few hundred characters of an error body are quoted; the rest is drained.
const MAX_ERROR_BYTES = 64 * 1024;

export interface ListModelsOptions {
  /**
   * A pool the caller owns. Without one, a private agent that honours `target.timeouts.connectMs` is made for
   * this call and destroyed when it ends; with one, the connect time-out is the pool's.
   */
  dispatcher?: Dispatcher;
}

async function fetchPage(
  spec: HttpRequestSpec,
  target: ProviderTarget,
  dispatcher: Dispatcher,
  context: UpstreamContext,
): Promise<unknown> {
  let res: Dispatcher.ResponseData;
  try {
    res = await request(spec.url, {
      method: spec.method,
      headers: spec.headers,
      body: spec.body,
      dispatcher,
      headersTimeout: target.timeouts.headMs,
      bodyTimeout: target.timeouts.idleMs,
    });
  } catch (err) {
    throw fromTransportError(err, context) ?? err;
  }
  if (res.statusCode < 200 || res.statusCode >= 300) {
    // The status decides the code; an error body cut short only loses the quote.
    const quoted = await readText(res.body, MAX_ERROR_BYTES).then(
      (read) => read.text,
      () => '',
    );
    throw fromUpstreamStatus(res.statusCode, res.headers, quoted, context);
  }
  let read: { text: string; complete: boolean };
  try {
    read = await readText(res.body, MAX_LIST_BYTES);
  } catch (err) {
    throw fromTransportError(err, context) ?? err;
  }
  if (!read.complete) {
    throw new ServiceError('UPSTREAM_ERROR', 'The provider answered its model list with a body over the size limit.', {
      details: { providerId: context.providerId, limitBytes: MAX_LIST_BYTES },
    });
  }
  try {
    return JSON.parse(read.text);
  } catch {
    throw unexpectedShape();
  }
}

async function collect(
  lister: ModelListAdapter,
  target: ProviderTarget,
  credential: string | null,
  dispatcher: Dispatcher,
): Promise<UpstreamModel[]> {
  const context: UpstreamContext = { providerId: target.id, credential };
  const models = new Map<string, UpstreamModel>();
  let cursor: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const body = await fetchPage(lister.listRequest(target, credential, cursor), target, dispatcher, context);
    const { models: found, next } = lister.parseList(body);
    for (const model of found) if (!models.has(model.upstreamModelId)) models.set(model.upstreamModelId, model);
    if (next === null) return [...models.values()];
    cursor = next;
  }
  throw new ServiceError('UPSTREAM_ERROR', `The provider's model list did not end within ${MAX_PAGES} pages.`, {
    details: { providerId: target.id, pages: MAX_PAGES },
  });
}

/**
 * The models a provider reports, every page of them, first occurrence of each upstream ID kept. Failures
 * are ServiceErrors with the UPSTREAM_* codes; anything else thrown is a bug and is left to become INTERNAL.
 */
/**
 * The server's parallel slots, where its kind names them (llama-server's GET /props); null when it does not,
 * or when the request fails: slot affinity then stays off for it, and the list is not failed for that.
 */
export async function listSlots(
  target: ProviderTarget,
  credential: string | null,
  options: ListModelsOptions = {},
): Promise<number | null> {
  const slots = ADAPTERS[target.kind].models?.slots;
  if (slots === undefined) return null;
  const agent = options.dispatcher ?? new Agent({ connect: { timeout: target.timeouts.connectMs } });
  try {
    const body = await fetchPage(slots.request(target, credential), target, agent, {
      providerId: target.id,
      credential,
    });
    return slots.parse(body);
  } catch {
    return null;
  } finally {
    if (options.dispatcher === undefined) await agent.destroy();
  }
}

export async function listModels(
  target: ProviderTarget,
  credential: string | null,
  options: ListModelsOptions = {},
): Promise<UpstreamModel[]> {
  const lister = ADAPTERS[target.kind].models;
  if (lister === null) return [];
  if (options.dispatcher !== undefined) return collect(lister, target, credential, options.dispatcher);
  const agent = new Agent({ connect: { timeout: target.timeouts.connectMs } });
  try {
    return await collect(lister, target, credential, agent);
  } finally {
    await agent.destroy();
  }
}
