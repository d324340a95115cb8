import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { ProbedTelemetry } from '../../../protocol/http/hardware.ts';
import { buildTelemetry, type RawHardware } from '../../../workers/hardware/probe.ts';

// Recorded systeminformation answers (test/fixtures/hardware) and the leak check every output must pass.

export interface HardwareFixture {
  description: string;
  raw: RawHardware;
  /** Serials, UUIDs, PCI addresses, host names and paths planted in `raw`; none may reach an output. */
  sensitive: string[];
}

export const FIXTURES = [
  'nvidia-workstation',
  'apple-silicon-laptop',
  'amd-radeon-linux',
  'no-gpu-server',
  'intel-laptop-windows',
] as const;
export type FixtureName = (typeof FIXTURES)[number];

export function loadFixture(name: FixtureName): HardwareFixture {
  return JSON.parse(
    readFileSync(new URL(`../../fixtures/hardware/${name}.json`, import.meta.url), 'utf8'),
  ) as HardwareFixture;
}

export const PROBED_AT = Date.UTC(2026, 0, 31, 12, 0, 0);

export function telemetryOf(name: FixtureName): ProbedTelemetry {
  return buildTelemetry(loadFixture(name).raw, PROBED_AT);
}

/** Every key and every scalar of `value`, as text, with its path: what a leak check has to look through. */
export function leaves(value: unknown, path = '$'): { path: string; text: string }[] {
  if (value === null || typeof value !== 'object') return [{ path, text: String(value) }];
  const out: { path: string; text: string }[] = [];
  for (const [key, child] of Object.entries(value)) {
    out.push({ path: `${path}.${key} (key)`, text: key });
    out.push(...leaves(child, `${path}.${key}`));
  }
  return out;
}

const SHAPES: [string, RegExp][] = [
  ['UUID', /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i],
  ['PCI address', /\b(?:[0-9a-f]{4,8}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\b/i],
  ['POSIX path', /(^|\s)\/[A-Za-z]/],
  ['Windows path', /[A-Za-z]:\\|\\\\/],
];

/** Fails naming the path of the first field that holds one of `sensitive`, or anything shaped like one. */
export function assertNoSensitive(output: unknown, sensitive: readonly string[]): void {
  for (const { path, text } of leaves(output)) {
    const lower = text.toLowerCase();
    for (const s of sensitive)
      assert.equal(lower.includes(s.toLowerCase()), false, `${path} holds ${JSON.stringify(s)}: ${text}`);
    for (const [what, shape] of SHAPES) assert.equal(shape.test(text), false, `${path} looks like a ${what}: ${text}`);
  }
}
