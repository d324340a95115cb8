import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  checkHardwareTelemetry,
  type HardwareTelemetry,
  type ProbedTelemetry,
} from '../../../protocol/http/hardware.ts';
import {
  buildTelemetry,
  cleanText,
  partialTelemetry,
  type RawController,
  type RawHardware,
} from '../../../workers/hardware/probe.ts';
import { assertNoSensitive, FIXTURES, leaves, loadFixture, PROBED_AT, telemetryOf } from './helpers.ts';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const asServed = (t: ProbedTelemetry): HardwareTelemetry => ({ ...t, stale: false, partial: false, reason: null });

describe('buildTelemetry on recorded systeminformation answers', () => {
  it('NVIDIA workstation: the driver-reported size, CUDA, high confidence', () => {
    const t = telemetryOf('nvidia-workstation');
    assert.deepEqual(t, {
      os: { platform: 'linux', distro: 'Ubuntu', release: '22.04.4 LTS', kernel: '6.5.0-27-generic' },
      arch: 'x64',
      cpu: { brand: 'Intel Core i9-13900K', logicalCores: 32, physicalCores: 24 },
      memory: { totalBytes: 67247898624, availableBytes: 58073722880 },
      gpus: [
        {
          name: 'NVIDIA GeForce RTX 4090',
          vendor: 'nvidia',
          backend: 'cuda',
          memoryKind: 'discrete',
          memoryBytes: 24564 * MiB,
          memorySource: 'reported',
          confidence: 'high',
        },
      ],
      confidence: 'high',
      probedAt: '2026-01-31T12:00:00.000Z',
    });
  });

  it('Apple-silicon laptop: unified memory estimated at two-thirds of 32 GiB, Metal, medium confidence', () => {
    const t = telemetryOf('apple-silicon-laptop');
    assert.deepEqual(t.os, { platform: 'darwin', distro: 'macOS', release: '14.4.1', kernel: '23.4.0' });
    assert.equal(t.arch, 'arm64');
    assert.deepEqual(t.cpu, { brand: 'Apple M2 Pro', logicalCores: 12, physicalCores: 12 });
    assert.deepEqual(t.gpus, [
      {
        name: 'Apple M2 Pro',
        vendor: 'apple',
        backend: 'metal',
        memoryKind: 'unified',
        memoryBytes: 21845 * MiB, // floor(32 GiB * 2/3) in whole MiB
        memorySource: 'estimated',
        confidence: 'medium',
      },
    ]);
    assert.equal(t.confidence, 'medium');
  });

  it(
    'AMD desktop: the discrete card on Vulkan with its reported size, the iGPU as shared memory estimated at ' + 'half',
    () => {
      const t = telemetryOf('amd-radeon-linux');
      assert.equal(t.cpu.brand, 'AMD Ryzen 9 7950X 16-Core Processor');
      assert.deepEqual(t.gpus, [
        {
          name: 'AMD Radeon RX 7900 XTX',
          vendor: 'amd',
          backend: 'vulkan',
          memoryKind: 'discrete',
          memoryBytes: 24560 * MiB,
          memorySource: 'reported',
          confidence: 'medium',
        },
        {
          name: 'Raphael',
          vendor: 'amd',
          backend: 'vulkan',
          memoryKind: 'shared',
          memoryBytes: Math.floor(66434756608 / 2 / MiB) * MiB,
          memorySource: 'estimated',
          confidence: 'low',
        },
      ]);
      assert.equal(t.confidence, 'low', 'the lowest GPU confidence');
    },
  );

  it('no-GPU server: an empty GPU list, medium overall confidence (absence is not proven)', () => {
    const t = telemetryOf('no-gpu-server');
    assert.deepEqual(t.gpus, []);
    assert.equal(t.confidence, 'medium');
    assert.deepEqual(t.os, {
      platform: 'linux',
      distro: 'Debian GNU/Linux',
      release: '12',
      kernel: '6.1.0-18-cloud-amd64',
    });
    assert.deepEqual(t.cpu, { brand: 'AMD EPYC', logicalCores: 2, physicalCores: 2 });
    assert.deepEqual(t.memory, { totalBytes: 25276510208, availableBytes: 24418086912 });
  });

  it('Windows laptop: Node platform name, Iris Xe as shared memory (not the 128 MiB carve-out)', () => {
    const t = telemetryOf('intel-laptop-windows');
    assert.equal(t.os.platform, 'win32');
    assert.deepEqual(t.gpus, [
      {
        name: 'Intel Iris Xe Graphics',
        vendor: 'intel',
        backend: 'vulkan',
        memoryKind: 'shared',
        memoryBytes: Math.floor(16843145216 / 2 / MiB) * MiB,
        memorySource: 'estimated',
        confidence: 'low',
      },
    ]);
  });

  it('every fixture validates against the closed response schema', () => {
    for (const name of FIXTURES) {
      const served = asServed(telemetryOf(name));
      assert.equal(
        checkHardwareTelemetry.Check(served),
        true,
        `${name}: ${JSON.stringify([...checkHardwareTelemetry.Errors(served)][0])}`,
      );
    }
  });
});

describe('no serial, UUID, PCI address, host name or path reaches the output', () => {
  for (const name of FIXTURES) {
    it(name, () => {
      const fixture = loadFixture(name);
      // The planted strings really are in the input, so finding none in the output means something.
      const input = leaves(fixture.raw).map((l) => l.text.toLowerCase());
      for (const s of fixture.sensitive)
        assert.ok(
          input.some((t) => t.includes(s.toLowerCase())),
          `${s} is planted in ${name}`,
        );
      assertNoSensitive(asServed(buildTelemetry(fixture.raw, PROBED_AT)), fixture.sensitive);
    });
  }

  it('the leak check itself catches a planted value copied into the output', () => {
    const fixture = loadFixture('nvidia-workstation');
    const leaky = { ...telemetryOf('nvidia-workstation'), serial: fixture.sensitive[0] };
    assert.throws(() => assertNoSensitive(leaky, fixture.sensitive), /\$\.serial holds/);
  });

  it('allow-listed strings that carry a UUID, a PCI address or a path are cleaned', () => {
    const raw: RawHardware = {
      osInfo: {
        platform: 'linux',
        distro: 'Custom (/etc/os-release)',
        release: '1',
        kernel: '6.1.0 C:\\Program Files\\x',
        arch: 'x64',
      },
      cpu: { manufacturer: 'Intel', brand: 'Xeon 0000:3b:00.0', cores: 4, physicalCores: 2 },
      mem: { total: 8 * GiB, available: 4 * GiB },
      graphics: {
        controllers: [
          {
            vendor: 'NVIDIA Corporation',
            model: 'GPU-1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b at /dev/nvidia0',
            vram: 8192,
          },
        ],
      },
    };
    const t = asServed(buildTelemetry(raw, PROBED_AT));
    assertNoSensitive(t, ['/etc/os-release', 'Program Files', '3b:00.0', '1f2e3d4c', '/dev/nvidia0']);
    assert.equal(t.gpus[0]?.name, 'GPU- at');
    assert.equal(t.os.distro, 'Custom ( )');
  });
});

describe('classification rules', () => {
  const machine = (controllers: RawController[], platform = 'linux', total = 32 * GiB): ProbedTelemetry =>
    buildTelemetry(
      {
        osInfo: { platform, arch: 'x64' },
        cpu: { cores: 8 },
        mem: { total, available: total / 2 },
        graphics: { controllers },
      },
      PROBED_AT,
    );

  it('NVIDIA without nvidia-smi (nouveau): Vulkan, and a sub-GiB lspci aperture is low confidence', () => {
    const [gpu] = machine([
      { vendor: 'NVIDIA Corporation', model: 'AD104 [GeForce RTX 4070]', vram: 256, vramDynamic: false },
    ]).gpus;
    assert.deepEqual(gpu, {
      name: 'AD104 [GeForce RTX 4070]',
      vendor: 'nvidia',
      backend: 'vulkan',
      memoryKind: 'discrete',
      memoryBytes: 256 * MiB,
      memorySource: 'reported',
      confidence: 'low',
    });
  });

  it('a discrete GPU that reports no size has no memory figure, not a zero', () => {
    const [gpu] = machine([
      {
        vendor: 'Advanced Micro Devices, Inc. [AMD/ATI]',
        model: 'Navi 31 [Radeon RX 7900 XT/7900 XTX/7900M]',
        vram: null,
      },
    ]).gpus;
    assert.equal(gpu?.name, 'Navi 31 [Radeon RX 7900 XT/7900 XTX/7900M]');
    assert.equal(gpu?.memoryKind, 'discrete');
    assert.equal(gpu?.memoryBytes, null);
    assert.equal(gpu?.memorySource, null);
    assert.equal(gpu?.confidence, 'low');
  });

  it('Apple silicon above 36 GiB: three-quarters of memory', () => {
    const [gpu] = machine(
      [{ vendor: 'Apple', model: 'Apple M2 Max', vram: null, vramDynamic: true }],
      'darwin',
      96 * GiB,
    ).gpus;
    assert.equal(gpu?.memoryBytes, 72 * GiB);
    assert.equal(gpu?.confidence, 'medium');
  });

  it('Apple GPU under Linux (Asahi): unified memory on Vulkan', () => {
    const [gpu] = machine([{ vendor: 'Apple Inc.', model: 'AGX G13G', vram: null }]).gpus;
    assert.equal(gpu?.backend, 'vulkan');
    assert.equal(gpu?.memoryKind, 'unified');
  });

  it('Intel Mac with a Radeon Pro: Metal, the card size from system_profiler at high confidence', () => {
    const t = machine(
      [
        { vendor: 'Intel', model: 'Intel UHD Graphics 630', vram: 1536, vramDynamic: true },
        { vendor: 'AMD', model: 'AMD Radeon Pro 5500M', vram: 8192, vramDynamic: false },
      ],
      'darwin',
      16 * GiB,
    );
    assert.deepEqual(
      t.gpus.map((g) => [g.backend, g.memoryKind, g.memoryBytes, g.memorySource, g.confidence]),
      [
        ['metal', 'shared', 8 * GiB, 'estimated', 'low'],
        ['metal', 'discrete', 8 * GiB, 'reported', 'high'],
      ],
    );
  });

  it('Intel Arc is discrete; AMD marketing names of integrated GPUs are shared', () => {
    const t = machine([
      { vendor: 'Intel Corporation', model: 'DG2 [Arc A770]', vram: 16384 },
      { vendor: 'Advanced Micro Devices, Inc.', model: 'AMD Radeon(TM) 780M', vram: 512 },
      { vendor: 'Advanced Micro Devices, Inc.', model: 'AMD Radeon(TM) Graphics', vram: 512 },
    ]);
    assert.deepEqual(
      t.gpus.map((g) => [g.name, g.memoryKind, g.confidence]),
      [
        ['DG2 [Arc A770]', 'discrete', 'medium'],
        ['AMD Radeon 780M', 'shared', 'low'],
        ['AMD Radeon Graphics', 'shared', 'low'],
      ],
    );
  });

  it('server and virtual display adapters are listed with backend none; empty entries are dropped', () => {
    const t = machine([
      { vendor: 'ASPEED Technology, Inc.', model: 'ASPEED Graphics Family', vram: 64 },
      { vendor: '', model: '', vram: null },
    ]);
    assert.deepEqual(
      t.gpus.map((g) => [g.name, g.vendor, g.backend]),
      [['ASPEED Graphics Family', 'other', 'none']],
    );
  });

  it('nonsense numbers become null rather than wrong values', () => {
    const t = buildTelemetry(
      { osInfo: {}, cpu: { cores: 0, physicalCores: 2.5 }, mem: { total: -1, available: Number.NaN }, graphics: {} },
      PROBED_AT,
    );
    assert.deepEqual(t.cpu, { brand: null, logicalCores: null, physicalCores: null });
    assert.deepEqual(t.memory, { totalBytes: null, availableBytes: null });
    assert.equal(t.os.platform, 'unknown');
    assert.equal(checkHardwareTelemetry.Check(asServed(t)), true);
  });
});

describe('partialTelemetry and cleanText', () => {
  it('a partial answer holds only what Node knows, flagged partial with low confidence', () => {
    const t = partialTelemetry(
      {
        platform: 'linux',
        arch: 'x64',
        kernel: '6.1.0',
        cpuModel: 'AMD EPYC 9B14',
        logicalCores: 2,
        totalBytes: 8 * GiB,
        freeBytes: GiB,
      },
      'probe_timeout',
      PROBED_AT,
    );
    assert.equal(checkHardwareTelemetry.Check(t), true);
    assert.deepEqual(
      {
        partial: t.partial,
        stale: t.stale,
        reason: t.reason,
        confidence: t.confidence,
        gpus: t.gpus,
        distro: t.os.distro,
      },
      { partial: true, stale: false, reason: 'probe_timeout', confidence: 'low', gpus: [], distro: null },
    );
  });

  it('keeps names that merely contain slashes, drops control characters, caps the length', () => {
    assert.equal(cleanText('Radeon RX 7900 XT/7900 XTX'), 'Radeon RX 7900 XT/7900 XTX');
    assert.equal(cleanText('a\u0000b\nc'), 'a b c');
    assert.equal(cleanText('x'.repeat(500))?.length, 120);
    assert.equal(cleanText('   '), null);
    assert.equal(cleanText(42), null);
  });
});
