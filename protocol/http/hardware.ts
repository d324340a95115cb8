import { Type, type Static } from '@sinclair/typebox';
import { compile } from '../validate.ts';

// HardwareTelemetry: the answer of GET /v1/hardware/telemetry and POST /v1/hardware/refresh. Every object
// is closed (`additionalProperties: false`): the probe builds it field by field from an allow-list, and
// the schema lets tests prove that nothing else (serials, UUIDs, PCI addresses, paths) slipped in.

export const GPU_VENDORS = ['nvidia', 'amd', 'intel', 'apple', 'other'] as const;
export type GpuVendor = (typeof GPU_VENDORS)[number];

export const GPU_BACKENDS = ['cuda', 'rocm', 'metal', 'vulkan', 'none'] as const;
export type GpuBackend = (typeof GPU_BACKENDS)[number];

export const GPU_MEMORY_KINDS = ['discrete', 'unified', 'shared'] as const;
export type GpuMemoryKind = (typeof GPU_MEMORY_KINDS)[number];

export const MEMORY_SOURCES = ['reported', 'estimated'] as const;
export type MemorySource = (typeof MEMORY_SOURCES)[number];

export const CONFIDENCES = ['high', 'medium', 'low'] as const;
export type Confidence = (typeof CONFIDENCES)[number];

/** Why an answer is stale or partial: codes only, never a message that could carry a path. */
export const TELEMETRY_REASONS = ['probe_timeout', 'probe_failed', 'worker_crashed'] as const;
export type TelemetryReason = (typeof TELEMETRY_REASONS)[number];

const literals = <T extends string>(values: readonly T[]) => Type.Union(values.map((v) => Type.Literal(v)));
const Text = Type.String({ minLength: 1, maxLength: 120 });
const NullableText = Type.Union([Text, Type.Null()]);
const Bytes = Type.Integer({ minimum: 0 });
const Count = Type.Integer({ minimum: 1 });

export const HardwareGpuSchema = Type.Object(
  {
    name: Text,
    vendor: literals(GPU_VENDORS),
    backend: literals(GPU_BACKENDS),
    memoryKind: literals(GPU_MEMORY_KINDS),
    /** Null only for a discrete GPU that reported no size: there is nothing to estimate from. */
    memoryBytes: Type.Union([Bytes, Type.Null()]),
    memorySource: Type.Union([literals(MEMORY_SOURCES), Type.Null()]),
    /** How far `memoryBytes` can be trusted as the memory this GPU can use for compute. */
    confidence: literals(CONFIDENCES),
  },
  { additionalProperties: false },
);
export type HardwareGpu = Static<typeof HardwareGpuSchema>;

export const HardwareTelemetrySchema = Type.Object(
  {
    os: Type.Object(
      { platform: Text, distro: NullableText, release: NullableText, kernel: NullableText },
      { additionalProperties: false },
    ),
    arch: Text,
    cpu: Type.Object(
      {
        brand: NullableText,
        logicalCores: Type.Union([Count, Type.Null()]),
        physicalCores: Type.Union([Count, Type.Null()]),
      },
      { additionalProperties: false },
    ),
    memory: Type.Object(
      { totalBytes: Type.Union([Bytes, Type.Null()]), availableBytes: Type.Union([Bytes, Type.Null()]) },
      { additionalProperties: false },
    ),
    gpus: Type.Array(HardwareGpuSchema),
    /** `low` when partial; else the lowest GPU confidence; `medium` for an empty GPU list (absence is not proof). */
    confidence: literals(CONFIDENCES),
    /** When the data was gathered (RFC 3339, UTC). A stale answer keeps the time of its last good probe. */
    probedAt: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$' }),
    /** The latest probe failed; this is the last good result. */
    stale: Type.Boolean(),
    /** No probe has succeeded yet; only what Node itself knows (no GPUs). */
    partial: Type.Boolean(),
    reason: Type.Union([literals(TELEMETRY_REASONS), Type.Null()]),
  },
  { additionalProperties: false },
);
export type HardwareTelemetry = Static<typeof HardwareTelemetrySchema>;

/** A completed probe, before the actor says how current it is. */
export type ProbedTelemetry = Omit<HardwareTelemetry, 'stale' | 'partial' | 'reason'>;

export const checkHardwareTelemetry = compile(HardwareTelemetrySchema);

export type ProbeOutcome = { ok: true; telemetry: ProbedTelemetry } | { ok: false; reason: TelemetryReason };

/**
 * Messages between the edge and the hardware worker (kind + correlation id, like every thread message).
 * A failure crosses as a reason code, never as an Error: its message and stack could hold paths.
 */
export interface HardwareProbeRequest {
  kind: 'hardware.probe';
  id: number;
}
export interface HardwareProbeReply {
  kind: 'hardware.probed';
  id: number;
  outcome: ProbeOutcome;
}
