import { parentPort } from 'node:worker_threads';
import { cpu, graphics, mem, osInfo } from 'systeminformation';
import type { HardwareProbeReply, HardwareProbeRequest, ProbeOutcome } from '../../protocol/http/hardware.ts';
import { buildTelemetry } from './probe.ts';

// The hardware actor's thread: the only code that calls systeminformation. It installs nothing and runs
// no command of its own; what systeminformation runs (lspci, nvidia-smi, system_profiler) runs here, off
// the edge's event loop, where a wedged call can be abandoned by terminating the thread.

async function probe(): Promise<ProbeOutcome> {
  try {
    const [os, processor, memory, gpus] = await Promise.all([osInfo(), cpu(), mem(), graphics()]);
    return {
      ok: true,
      telemetry: buildTelemetry({ osInfo: os, cpu: processor, mem: memory, graphics: gpus }, Date.now()),
    };
  } catch {
    // The cause may name files on this host; the edge gets the code only.
    return { ok: false, reason: 'probe_failed' };
  }
}

const port = parentPort;
if (!port) throw new Error('workers/hardware/worker.ts runs only as a worker thread');
port.on('message', (m: HardwareProbeRequest) => {
  if (m.kind !== 'hardware.probe') return;
  void probe().then((outcome) =>
    port.postMessage({ kind: 'hardware.probed', id: m.id, outcome } satisfies HardwareProbeReply),
  );
});
