// A stand-in hardware worker for the restart test: while the test asks for it (an environment variable,
// which each new worker copies at start), it dies on a probe with an uncaught error; otherwise it answers
// with a small canned probe.
import { parentPort } from 'node:worker_threads';

const crash = process.env.SWITCHYARD_TEST_HARDWARE_CRASH === '1';

parentPort.on('message', (m) => {
  if (crash) {
    setImmediate(() => {
      throw new Error('hardware worker crashed on purpose');
    });
    return;
  }
  parentPort.postMessage({
    kind: 'hardware.probed',
    id: m.id,
    outcome: {
      ok: true,
      telemetry: {
        os: { platform: 'linux', distro: 'Canned', release: '1', kernel: '1.0' },
        arch: 'x64',
        cpu: { brand: 'Canned CPU', logicalCores: 2, physicalCores: 1 },
        memory: { totalBytes: 1024, availableBytes: 512 },
        gpus: [],
        confidence: 'medium',
        probedAt: new Date().toISOString(),
      },
    },
  });
});
