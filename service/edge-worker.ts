import { join } from 'node:path';
import { workerData } from 'node:worker_threads';
import { createRelayMetrics } from '../metrics/relay-tap.ts';
import { createCredentialMetrics } from '../metrics/credentials.ts';
import { createRegistry } from '../metrics/registry.ts';
import { createTrafficMetrics } from '../metrics/traffic.ts';
import { firstOf, plainNames } from '../edge/gateway/plain-names.ts';
import { createApp } from '../edge/http/app.ts';
import { responsesSocketRoute } from '../edge/gateway/responses-socket.ts';
import { createBodyBudget } from '../edge/http/body-budget.ts';
import { chooseEdge } from '../edge/http/choose-edge.ts';
import { corsPolicy } from '../edge/http/cors.ts';
import { forwardClient, forwardedRoutes } from '../edge/http/forward-routes.ts';
import { createPostingLogger } from '../edge/http/log.ts';
import { drain, listen, type Listening } from '../edge/http/server.ts';
import { connectionsClosed } from '../edge/http/open-connections.ts';
import { createAuthTable } from '../state/auth-table.ts';
import { createCatalogMirror } from '../state/catalog-index.ts';
import { ServiceError } from '../protocol/errors.ts';
import type { FromControl } from '../protocol/forward.ts';
import { responseRouteRepo } from '../store/response-route-repo.ts';
import { requestLogRepo, requestLogSink } from '../store/request-log-repo.ts';
import { openStoreEnv } from '../store/env.ts';
import { openUsageJournal, type JournalMark } from '../store/usage-journal.ts';
import { packRecord, RECORD_SLOTS } from '../protocol/meter.ts';
import { createRelayPool } from '../workers/proxy/relay-pool.ts';
import { portClient, servePorts } from '../workers/shared/port-channel.ts';
import { remoteRelayPool } from '../workers/shared/relay-over-port.ts';
import {
  EDGE_FEED_METHODS,
  type EdgeFeedPort,
  type EdgeReport,
  type EdgeSettings,
  type EdgeWorkerData,
} from './edge-feed.ts';
import { edgeProviders, edgeSmartRouting, FORWARD_TO_CONTROL, reportBatcher } from './edge-worker-parts.ts';
import { createKeyPool } from '../edge/gateway/key-pool.ts';
import { edgeAdmissionSource } from './edge-admission.ts';
import { wireGateway } from './gateway-wiring.ts';
import { createKeyPoolTable } from '../state/key-pool-table.ts';
import { createRouteWrites } from '../state/route-writes.ts';

// An edge thread (docs/api.md, "Edge threads"): its own listener on the service's port, its own relay workers,
// and copies of what the hot path reads, fed by the control thread (edge-threads.ts). It serves the gateway's
// routes itself and hands every other route to the control thread whole (edge/http/forward-routes.ts).

const data = workerData as EdgeWorkerData;
const { ports } = data;
// On the feed's port, behind the answers to the feed's calls: the last batch arrives before close() answers.
const reports = reportBatcher((batch: EdgeReport[]) => ports.feed.postMessage(batch));
const log = createPostingLogger(data.logLevel, data.index, (line) => reports.add({ t: 'log', line }));
const auth = createAuthTable();
const catalog = createCatalogMirror();
let settings: EdgeSettings | null = null;
let cors = corsPolicy([]);

const registry = createRegistry();
const traffic = createTrafficMetrics(registry);
// The calls this thread served, by the key that served them. Each key's state is the control thread's to show
// (it reads the same shared table), so this thread lists no keys.
const credentialCalls = createCredentialMetrics(registry, () => []);
const relayMetrics = createRelayMetrics(registry);
const env = openStoreEnv(data.dataDir);
const relayPool = createRelayPool({ dataDir: data.dataDir, threads: data.relayThreads });
const runtime = remoteRelayPool(ports.runtime);
const forwarding = forwardClient((m, transfer) => ports.forward.postMessage(m, transfer ?? []));
ports.forward.on('message', (m: FromControl) => forwarding.take(m));
const calls = portClient(ports.calls);
const keyPool = createKeyPool({
  table: createKeyPoolTable(data.keyPool),
  idleMs: () => settings?.sessionIdleMs ?? 600_000,
});
const providers = edgeProviders(calls);
const journal = openUsageJournal({
  dataDir: data.dataDir,
  run: data.usageRun,
  writer: `edge${data.index}`,
  onFailure: (err) =>
    log.error({ err: err.message }, 'usage journal write failed; metering goes on without crash recovery'),
});

const limits = edgeAdmissionSource({
  ledger: data.limitLedger,
  gate: data.limitGate,
  journalDir: join(data.dataDir, 'limit-journal'),
  report: (r) => reports.add(r),
  log,
});

const local = wireGateway({
  catalog,
  relay: relayPool,
  runtime,
  tap: (pool) => relayMetrics.tap(pool),
  responses: responseRouteRepo(env, createRouteWrites(data.routeWrites)),
  log,
  spillDir: join(data.dataDir, 'tmp'),
  smart: edgeSmartRouting(calls, reports),
  keyPool,
  limits: limits.source,
  priceOf: limits.priceOf,
  rejectCredential: (providerId, credentialId, status, seenUpdatedAt) =>
    providers.rejectCredential(providerId, credentialId, status, seenUpdatedAt),
  // This thread writes its calls' entries into the shared store itself: bodies of megabytes need not cross to the
  // control thread, and LMDB serializes the writers (store/request-log-repo.ts).
  requestLog: requestLogSink(
    requestLogRepo(env),
    () => settings?.requestLog ?? null,
    (err) => log.warn({ err: String(err).slice(0, 300) }, 'could not keep a request log entry'),
  ),
  meterUsage(event) {
    // Journaled here, before the answer's last bytes; the control thread meters it (store/usage-journal.ts).
    let mark: JournalMark | null = null;
    if (settings?.usageEnabled !== false) {
      const fields: unknown[] = [];
      packRecord(fields, event);
      mark = journal.append(fields, 0, RECORD_SLOTS);
    }
    reports.add({ t: 'usage', event, mark });
  },
  recordUsage: (event) => {
    traffic.usage(event);
    credentialCalls.usage(event);
  },
  // A GGUF file of the embedded runtime not yet in the catalog is the control thread's to find.
  unresolved: firstOf(
    (current, name) => {
      const slash = name.indexOf('/');
      if (slash > 0 && current.provider(name.slice(0, slash))?.kind === 'embedded') throw FORWARD_TO_CONTROL;
      return null;
    },
    plainNames(() => settings?.providerOrder ?? []),
  ),
}).map((def) => {
  const name = `${def.method} ${def.path}`;
  return {
    ...def,
    async handle(ctx: Parameters<typeof def.handle>[0]) {
      // The loop brake follows each session's calls in the control thread's state: while it is on (or limits
      // run on a test's clock), that thread serves every call.
      if (limits.handsOver()) return forwarding.forward(name, await whole(ctx));
      try {
        return await def.handle(ctx);
      } catch (err) {
        if (err !== FORWARD_TO_CONTROL) throw err;
        if (ctx.bodyStream !== null)
          throw new ServiceError('INVALID_REQUEST', 'The embedded runtime takes no uploads: name a listed model.', {
            param: 'model',
          });
        return forwarding.forward(name, ctx);
      }
    },
  };
});

/** A streamed upload read whole, for the control thread (the app has bounded it by the multipart limit). */
async function whole(ctx: Parameters<(typeof local)[number]['handle']>[0]) {
  if (ctx.bodyStream === null) return ctx;
  const chunks: Uint8Array[] = [];
  for await (const chunk of ctx.bodyStream) chunks.push(chunk);
  return { ...ctx, req: { ...ctx.req, body: Buffer.concat(chunks) }, bodyStream: null };
}

const app = createApp({
  routes: [...local, ...forwardedRoutes(data.shapes, forwarding)],
  log,
  authenticate: (secret) => auth.authenticate(secret),
  cors: () => cors,
  jsonBodyLimit: () => settings!.jsonBodyBytes,
  multipartBodyLimit: () => settings!.multipartBodyBytes,
  listener: { host: data.host, networkExposed: data.networkExposed },
  isDraining: () => draining,
  observe: traffic.observer,
});

let listening: Listening | null = null;
let draining = false;
// The tokens this thread authenticated reach the control thread's `lastUsedAt` within a second.
const reportUses = () => {
  const uses = auth.takeUses();
  if (uses.length > 0) reports.add({ t: 'uses', uses });
};
const usesTimer = setInterval(reportUses, 1000);
usesTimer.unref();

const feed: EdgeFeedPort = {
  auth: (change) => auth.apply(change),
  catalog: (change) => catalog.apply(change),
  settings(next) {
    settings = next;
    cors = corsPolicy(next.allowedOrigins);
  },
  admission: (next) => limits.apply(next),
  async listen() {
    const { uws } = chooseEdge('uws');
    listening = await listen(uws, app, data.host, data.port, {
      arena: relayPool.arena,
      bodyBudget: createBodyBudget(() => settings!.bodyBudgetBytes),
      shared: true,
      sockets: [
        responsesSocketRoute({
          app,
          maxMessageBytes: () => settings!.jsonBodyBytes,
          isDraining: () => draining,
        }),
      ],
    });
  },
  async drain(drainMs) {
    draining = true;
    const inflight = listening === null ? 0 : await drain(listening, drainMs);
    if (inflight > 0) log.warn({ inflight }, 'edge thread stopping with requests in flight');
  },
  async close() {
    clearInterval(usesTimer);
    listening?.stopListening();
    forwarding.close();
    await Promise.all([relayPool.close(), runtime.close()]);
    journal.close();
    limits.close();
    await env.close();
    // The thread may stop only once uWS holds no connection in it (open-connections.ts): the drain is over, so
    // the connections left are idle (or their calls were cut), and they are closed rather than waited for.
    listening?.closeConnections();
    if (!(await connectionsClosed(data.port)))
      log.warn('edge thread stopping with connections still open; the process may abort');
    reportUses();
    reports.flush();
    calls.close();
  },
  metrics: () => registry.snapshot(),
};
servePorts(ports.feed, { feed: { target: feed, methods: EDGE_FEED_METHODS } });
// The feed holds the thread open until the control thread ends it.
ports.feed.ref();
