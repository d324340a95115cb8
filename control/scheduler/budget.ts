import { totalmem } from 'node:os';
import type { HardwareTelemetry } from '../../protocol/http/hardware.ts';

// The scheduler's memory budget: `runtime.memoryBudgetBytes` when set, else what the hardware probe found,
// discrete GPU memory plus system RAM (a unified or shared GPU draws on the RAM already counted). The probe
// runs once, at the first local load, not at start: a service without local models never pays for it. Until
// it answers, Node's own figure for RAM stands in.

export type BudgetSource = 'setting' | 'hardware' | 'system';

export interface MemoryBudget {
  bytes(): number;
  source(): BudgetSource;
  /** Asks the probe once; later calls do nothing. Resolves when the figure is known (never rejects). */
  probe(): Promise<void>;
}

export function hardwareBytes(t: HardwareTelemetry): number | null {
  const ram = t.memory.totalBytes;
  if (ram === null) return null;
  let gpu = 0;
  for (const g of t.gpus) if (g.memoryKind === 'discrete' && g.memoryBytes !== null) gpu += g.memoryBytes;
  return ram + gpu;
}

export function memoryBudget(
  setting: () => number | null,
  hardware: { telemetry(): Promise<HardwareTelemetry> },
): MemoryBudget {
  let probed: number | null = null;
  let probing: Promise<void> | null = null;
  return {
    bytes: () => setting() ?? probed ?? totalmem(),
    source: () => (setting() !== null ? 'setting' : probed !== null ? 'hardware' : 'system'),
    probe() {
      probing ??= hardware.telemetry().then(
        (t) => void (probed = hardwareBytes(t)),
        () => undefined,
      );
      return probing;
    },
  };
}
