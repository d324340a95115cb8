import { parentPort, workerData } from 'node:worker_threads';
import { ServiceError } from '../../protocol/errors.ts';
import type { GaugeReply, GaugeRequest, GaugeWorkerData } from '../../protocol/gauge-messages.ts';
import { openStoreEnv } from '../../store/env.ts';
import { gaugeDataRepo } from '../../store/gauge-data-repo.ts';
import { gaugeSourceRepo } from '../../store/gauge-source-repo.ts';
import { usageRepo } from '../../store/usage-repo.ts';
import { openVault, type Vault } from '../../store/vault/index.ts';
import { createGaugeCore } from './core.ts';
import { serviceCollector } from './service-source.ts';

// The gauge actor's thread: it owns collection (engine, scheduler, live-header readings, retention) and reads
// provider credentials from the vault itself, read-only; the edge never holds them and no message carries them.

const data = workerData as GaugeWorkerData;
const port = parentPort;
if (!port) throw new Error('workers/gauge/worker.ts runs only as a worker thread');

const env = openStoreEnv(data.dataDir);
let vault: Promise<Vault> | undefined;
const collected: string[] = [];
const core = await createGaugeCore({
  env,
  sources: gaugeSourceRepo(env),
  data: gaugeDataRepo(env),
  service: serviceCollector({ usage: usageRepo(env) }),
  credentialOf: async (ref) => (await (vault ??= openVault({ dataDir: data.dataDir, readOnly: true }))).get(ref),
  options: data,
  onCollected: (id) => {
    // Collections that end together go as one message.
    collected.push(id);
    if (collected.length === 1) setImmediate(() => reply({ kind: 'gauge.collected', sourceIds: collected.splice(0) }));
  },
});

const reply = (m: GaugeReply) => port.postMessage(m);
const fail = (id: number, err: unknown) => {
  const e = err instanceof ServiceError ? err : new ServiceError('INTERNAL', 'The gauge worker failed.');
  reply({ kind: 'gauge.failed', id, error: e.toPayload() });
};

port.on('message', (m: GaugeRequest) => {
  // A message may follow a write of the edge's (an account created, then refreshed): read a fresh snapshot.
  // lmdb renews this thread's read transaction on a 0 ms timer only, and a message can come first: a refresh
  // then missed accounts created just before it ("The source no longer exists", gauge-pool.suite.ts).
  env.root.resetReadTxn();
  switch (m.kind) {
    case 'gauge.configure':
      core.configure(m.enabled, m.retentionDays);
      return;
    case 'gauge.setup':
      core.setupChanged();
      return;
    case 'gauge.traffic':
      core.traffic(m.calls, m.headers);
      return;
    case 'gauge.refresh':
      core.refresh(m.sourceIds).then(
        (outcomes) => reply({ kind: 'gauge.refreshed', id: m.id, outcomes }),
        (err: unknown) => fail(m.id, err),
      );
      return;
    case 'gauge.prune':
      core.prune().then(
        (removed) => reply({ kind: 'gauge.pruned', id: m.id, removed }),
        (err: unknown) => fail(m.id, err),
      );
      return;
    case 'gauge.close':
      core
        .close()
        .then(() => env.close())
        .then(
          () => reply({ kind: 'gauge.closed', id: m.id }),
          (err: unknown) => fail(m.id, err),
        );
      return;
  }
});
