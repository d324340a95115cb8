import type {
  Confidence,
  GpuBackend,
  GpuMemoryKind,
  GpuVendor,
  HardwareGpu,
  HardwareTelemetry,
  MemorySource,
  ProbedTelemetry,
  TelemetryReason,
} from '../../protocol/http/hardware.ts';

// Turns systeminformation's answers into HardwareTelemetry. Pure, so recorded answers can test it.
// Every output object is built here from named fields: nothing of systeminformation's objects is copied
// wholesale, because they carry serials, UUIDs, PCI addresses and host names next to what we want.

/** The fields read from systeminformation (units as it gives them: bytes for mem, MiB for vram). */
export interface RawController {
  vendor?: string | null;
  vendorId?: string | null;
  model?: string | null;
  /** Set from nvidia-smi when it answered: the marketing name. */
  name?: string | null;
  vram?: number | null;
  vramDynamic?: boolean | null;
  /** Set from nvidia-smi when it answered, in MiB: proof the proprietary driver is installed. */
  memoryTotal?: number | null;
  driverVersion?: string | null;
}

export interface RawHardware {
  osInfo: {
    platform?: string | null;
    distro?: string | null;
    release?: string | null;
    kernel?: string | null;
    arch?: string | null;
  };
  cpu: { manufacturer?: string | null; brand?: string | null; cores?: number | null; physicalCores?: number | null };
  mem: { total?: number | null; available?: number | null };
  graphics: { controllers?: readonly RawController[] | null };
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/**
 * Apple silicon: macOS lets the GPU wire about two-thirds of memory on machines with up to 36 GiB and
 * three-quarters above that (Metal's default `recommendedMaxWorkingSetSize`). `iogpu.wired_limit_mb`
 * can move it, so the figure is an estimate of medium confidence.
 */
export const UNIFIED_SHARE_UP_TO_36_GIB = 2 / 3;
export const UNIFIED_SHARE_ABOVE_36_GIB = 3 / 4;
/**
 * Integrated Intel and AMD GPUs: Windows offers half of system memory as shared GPU memory, and amdgpu's
 * and i915's default GTT limits are of the same order. Drivers and BIOS settings vary, hence low confidence.
 */
export const SHARED_SHARE = 1 / 2;
/** A "reported" discrete size under this is most likely a PCI aperture (lspci), not the card's memory. */
const APERTURE_SUSPECT_BYTES = GiB;

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const PCI_ADDRESS = /\b(?:[0-9a-f]{4,8}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\b/gi;
const POSIX_PATH = /(^|[\s([=,;:])\/[^\s)\],;]+/g;
// Windows paths hold spaces (`C:\Program Files\...`), so everything from the drive letter on goes.
const WINDOWS_PATH = /\b[a-z]:\\.*$|\\\\\S+/gi;
const CONTROL = /[\u0000-\u001f\u007f]/g;
const TRADEMARKS = /\((?:tm|r)\)|[™®]/gi;

/**
 * The allow-listed strings themselves (model, distro, brand) come from tools and files on the host; a
 * second line of defence removes anything shaped like a UUID, a PCI address or a path from them.
 */
export function cleanText(value: unknown, max = 120): string | null {
  if (typeof value !== 'string') return null;
  const text = value
    .replace(CONTROL, ' ')
    .replace(TRADEMARKS, '')
    .replace(UUID, ' ')
    .replace(PCI_ADDRESS, ' ')
    .replace(WINDOWS_PATH, ' ')
    .replace(POSIX_PATH, '$1 ')
    .replace(/\s+/g, ' ')
    .trim();
  return text === '' ? null : text.slice(0, max).trim();
}

const count = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) && v >= 1 ? v : null);
const bytes = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null);
const mebibytes = (v: unknown): number | null =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.round(v * MiB) : null;
/** Estimates are rounded down to whole MiB: they are not precise, and should not look it. */
const share = (total: number, fraction: number): number => Math.floor((total * fraction) / MiB) * MiB;

function vendorOf(text: string): GpuVendor {
  if (/nvidia|\b(?:0x)?10de\b/.test(text)) return 'nvidia';
  if (/advanced micro devices|\bamd\b|\bati\b|radeon|\b(?:0x)?1002\b/.test(text)) return 'amd';
  if (/intel|\b(?:0x)?8086\b/.test(text)) return 'intel';
  if (/apple|\b(?:0x)?106b\b/.test(text)) return 'apple';
  return 'other';
}

const INTEL_DISCRETE = /\barc\b|\bdg[12]\b|alchemist|battlemage/;
// Integrated AMD GPUs by the names lspci (codenames) and Windows/OpenCL (marketing names) give them.
const AMD_INTEGRATED = new RegExp(
  [
    'radeon graphics|radeon vega|radeon \\d{3,4}[ms]\\b|renoir|cezanne|lucienne|barcelo|rembrandt|phoenix|hawk point',
    'raphael|mendocino|van gogh|raven|picasso|dali\\b|pollock|strix|krackan|granite ridge|kaveri|carrizo|stoney',
    'kabini|mullins',
  ].join('|'),
);

function memoryKindOf(vendor: GpuVendor, text: string, c: RawController): GpuMemoryKind {
  if (vendor === 'apple') return 'unified';
  if (c.vramDynamic === true) return 'shared';
  if (vendor === 'intel' && !INTEL_DISCRETE.test(text)) return 'shared';
  if (vendor === 'amd' && AMD_INTEGRATED.test(text)) return 'shared';
  return 'discrete';
}

/** nvidia-smi answered (systeminformation merged its fields): the CUDA driver is installed. */
const hasNvidiaDriver = (c: RawController): boolean =>
  mebibytes(c.memoryTotal) !== null || cleanText(c.driverVersion) !== null;

/**
 * AMD maps to `vulkan`, not `rocm`: ROCm needs its own runtime and a supported card, neither of which can be
 * seen without a driver tool or a package manager, while Mesa's Vulkan driver serves every current AMD GPU.
 */
function backendOf(vendor: GpuVendor, platform: string, c: RawController): GpuBackend {
  if (vendor === 'other') return 'none';
  if (platform === 'darwin') return 'metal';
  if (vendor === 'nvidia') return hasNvidiaDriver(c) ? 'cuda' : 'vulkan';
  return 'vulkan';
}

interface GpuMemory {
  memoryBytes: number | null;
  memorySource: MemorySource | null;
  confidence: Confidence;
}

function memoryOf(kind: GpuMemoryKind, platform: string, c: RawController, totalBytes: number | null): GpuMemory {
  const reported = mebibytes(c.vram);
  if (kind === 'unified' || kind === 'shared') {
    if (totalBytes === null)
      return reported === null
        ? unknownMemory()
        : { memoryBytes: reported, memorySource: 'reported', confidence: 'low' };
    if (kind === 'shared')
      return { memoryBytes: share(totalBytes, SHARED_SHARE), memorySource: 'estimated', confidence: 'low' };
    const fraction = totalBytes > 36 * GiB ? UNIFIED_SHARE_ABOVE_36_GIB : UNIFIED_SHARE_UP_TO_36_GIB;
    return { memoryBytes: share(totalBytes, fraction), memorySource: 'estimated', confidence: 'medium' };
  }
  const fromDriver = mebibytes(c.memoryTotal);
  if (fromDriver !== null) return { memoryBytes: fromDriver, memorySource: 'reported', confidence: 'high' };
  if (reported === null) return unknownMemory();
  // system_profiler reads a Mac card's own VRAM; elsewhere the figure may come from lspci or WMI.
  const confidence: Confidence = platform === 'darwin' ? 'high' : reported >= APERTURE_SUSPECT_BYTES ? 'medium' : 'low';
  return { memoryBytes: reported, memorySource: 'reported', confidence };
}

const unknownMemory = (): GpuMemory => ({ memoryBytes: null, memorySource: null, confidence: 'low' });

function gpuOf(c: RawController, platform: string, totalBytes: number | null): HardwareGpu | null {
  const name = cleanText(c.name) ?? cleanText(c.model);
  const text = [c.vendor, c.vendorId, c.model, c.name]
    .map((s) => cleanText(s) ?? '')
    .join(' ')
    .toLowerCase();
  const vendor = vendorOf(text);
  // clinfo and lspci sometimes leave an entry with nothing identifying in it: not a GPU anyone can use.
  if (name === null && vendor === 'other') return null;
  const memoryKind = memoryKindOf(vendor, text, c);
  return {
    name: name ?? `${vendor} GPU`,
    vendor,
    backend: backendOf(vendor, platform, c),
    memoryKind,
    ...memoryOf(memoryKind, platform, c, totalBytes),
  };
}

const RANK: Record<Confidence, number> = { high: 2, medium: 1, low: 0 };

function overallConfidence(gpus: readonly HardwareGpu[]): Confidence {
  // An empty list from a full probe is not proof of no GPU (Linux lists them through lspci, which may be absent).
  if (gpus.length === 0) return 'medium';
  return gpus.reduce<Confidence>((low, g) => (RANK[g.confidence] < RANK[low] ? g.confidence : low), 'high');
}

function cpuBrand(manufacturer: string | null, brand: string | null): string | null {
  if (brand === null || manufacturer === null) return brand ?? manufacturer;
  return brand.toLowerCase().startsWith(manufacturer.toLowerCase()) ? brand : cleanText(`${manufacturer} ${brand}`);
}

/** Node's names (`process.platform`): systeminformation says `Windows` where Node says `win32`. */
function platformOf(value: unknown): string {
  const text = cleanText(value)?.toLowerCase() ?? 'unknown';
  return text === 'windows' ? 'win32' : text;
}

export function buildTelemetry(raw: RawHardware, now: number): ProbedTelemetry {
  const platform = platformOf(raw.osInfo.platform);
  const totalBytes = bytes(raw.mem.total);
  const gpus: HardwareGpu[] = [];
  for (const c of raw.graphics.controllers ?? []) {
    const gpu = gpuOf(c, platform, totalBytes);
    if (gpu) gpus.push(gpu);
  }
  return {
    os: {
      platform,
      distro: cleanText(raw.osInfo.distro),
      release: cleanText(raw.osInfo.release),
      kernel: cleanText(raw.osInfo.kernel),
    },
    arch: cleanText(raw.osInfo.arch) ?? 'unknown',
    cpu: {
      brand: cpuBrand(cleanText(raw.cpu.manufacturer), cleanText(raw.cpu.brand)),
      logicalCores: count(raw.cpu.cores),
      physicalCores: count(raw.cpu.physicalCores),
    },
    memory: { totalBytes, availableBytes: bytes(raw.mem.available) },
    gpus,
    confidence: overallConfidence(gpus),
    probedAt: new Date(now).toISOString(),
  };
}

/** What Node itself knows without systeminformation: enough for a partial answer when no probe succeeded. */
export interface NodeFacts {
  platform: string;
  arch: string;
  kernel: string;
  cpuModel: string | null;
  logicalCores: number;
  totalBytes: number;
  freeBytes: number;
}

export function partialTelemetry(facts: NodeFacts, reason: TelemetryReason, now: number): HardwareTelemetry {
  return {
    os: { platform: platformOf(facts.platform), distro: null, release: null, kernel: cleanText(facts.kernel) },
    arch: cleanText(facts.arch) ?? 'unknown',
    cpu: { brand: cleanText(facts.cpuModel), logicalCores: count(facts.logicalCores), physicalCores: null },
    memory: { totalBytes: bytes(facts.totalBytes), availableBytes: bytes(facts.freeBytes) },
    gpus: [],
    confidence: 'low',
    probedAt: new Date(now).toISOString(),
    stale: false,
    partial: true,
    reason,
  };
}
