import { parentPort, workerData } from 'node:worker_threads';
import type { FromTraces, ToTraces, TracesThreadData } from '../../protocol/traces.ts';
import { startPipeline } from './otlp-pipeline.ts';

// The traces thread: the OpenTelemetry SDK's span objects, its batching and the OTLP/HTTP export, off the thread
// that serves calls. It takes span plans a batch at a time and answers flush and shutdown.

const port = parentPort;
if (!port) throw new Error('workers/traces/worker.ts runs only as a worker thread');
const data = workerData as TracesThreadData;
const post = (m: FromTraces) => port.postMessage(m);
const pipeline = startPipeline({
  endpoint: data.endpoint,
  headers: data.headers,
  version: data.version,
  log: { warn: (fields, message) => post({ t: 'warn', fields, message }) },
});

port.on('message', (m: ToTraces) => {
  if (m.t === 'spans') {
    for (const plan of m.plans) pipeline.emit(plan);
    return;
  }
  const settle = () => post({ t: 'done', id: m.id });
  if (m.t === 'flush') void pipeline.flush().then(settle, settle);
  else
    void pipeline.shutdown().then(
      () => (settle(), port.close()),
      () => (settle(), port.close()),
    );
});
