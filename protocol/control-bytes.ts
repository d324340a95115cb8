// A 16-bytes-at-a-time test for control characters (bytes below 0x20), for memory shared with WebAssembly.
// A strict JSON scan of a large body spends most of its time asking whether a string's bytes hold a control
// character (json-scan.ts). JavaScript answers four bytes at a time, about 40 us for 256 KB; this SIMD
// function answers sixteen, about 8 us. It runs on a shared WebAssembly memory, whose buffer is a
// SharedArrayBuffer: the body arena (workers/shared/body-arena.ts) is one.

/** Memory whose bytes can be tested in place, and the test. */
export interface ScannableMemory {
  buffer: SharedArrayBuffer;
  /** True when the test is the WebAssembly SIMD one. */
  simd: boolean;
  /** Whether any byte in [offset, offset + length) of `buffer` is below 0x20. */
  hasControl(offset: number, length: number): boolean;
}

const WASM_PAGE = 64 * 1024;

// The slice of the WebAssembly API used here (the project's TypeScript libs do not declare it).
interface WasmApi {
  Memory: new (descriptor: { initial: number; maximum: number; shared: boolean }) => { buffer: SharedArrayBuffer };
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

function leb(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}
const section = (id: number, content: number[]) => [id, ...leb(content.length), ...content];
const name = (s: string) => [s.length, ...Buffer.from(s, 'latin1')];
const hex = (s: string) =>
  s
    .trim()
    .split(/\s+/)
    .map((h) => parseInt(h, 16));

// (func $ctl (param $p i32) (param $n i32) (result i32)   ;; locals: 2 $end, 3 $vend (i32), 4 $lim (v128)
const CTL_BODY = hex(
  `
  02 02 7f 01 7b
  20 00 20 01 6a 21 02                       ;; end = p + n
  20 00 20 01 41 40 71 6a 21 03              ;; vend = p + (n & -64)
  41 20 fd 0f 21 04                          ;; lim = i8x16.splat(0x20)
  02 40 03 40                                ;; block, loop: 64 bytes a turn
    20 00 20 03 4f 0d 01                     ;;   p >= vend: to the tail
    20 00 fd 00 00 00 20 04 fd 26            ;;   i8x16.lt_u(load(p), lim)
    20 00 fd 00 00 10 20 04 fd 26 fd 50      ;;   | i8x16.lt_u(load(p + 16), lim)
    20 00 fd 00 00 20 20 04 fd 26 fd 50      ;;   | ... p + 32
    20 00 fd 00 00 30 20 04 fd 26 fd 50      ;;   | ... p + 48
    fd 53 04 40 41 01 0f 0b                  ;;   v128.any_true: return 1
    20 00 41 c0 00 6a 21 00 0c 00            ;;   p += 64; again
  0b 0b
  02 40 03 40                                ;; block, loop: the tail, a byte a turn
    20 00 20 02 4f 0d 01                     ;;   p >= end: done
    20 00 2d 00 00 41 20 49 04 40 41 01 0f 0b ;;  load8_u(p) < 0x20: return 1
    20 00 41 01 6a 21 00 0c 00               ;;   p += 1; again
  0b 0b
  41 00 0b                                   ;; return 0
`.replace(/;;.*$/gm, ''),
);

const MODULE = new Uint8Array([
  ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
  ...section(1, [1, 0x60, 2, 0x7f, 0x7f, 1, 0x7f]), // type 0: (i32, i32) -> i32
  // shared memory, 1..65536 pages
  ...section(2, [1, ...name('env'), ...name('memory'), 0x02, 0x03, ...leb(1), ...leb(65536)]),
  ...section(3, [1, 0]),
  ...section(7, [1, ...name('ctl'), 0x00, 0x00]),
  ...section(10, [1, ...leb(CTL_BODY.length), ...CTL_BODY]),
]);

/**
 * `bytes` of shared memory (rounded up to whole 64 KB pages) with the SIMD test, or, where WebAssembly
 * SIMD or shared memory is not available (or address space is capped), a plain SharedArrayBuffer and
 * a JavaScript test.
 */
export function scannableMemory(bytes: number): ScannableMemory {
  const pages = Math.ceil(bytes / WASM_PAGE);
  try {
    const memory = new wasm.Memory({ initial: pages, maximum: pages, shared: true });
    const ctl = new wasm.Instance(new wasm.Module(MODULE), { env: { memory } }).exports.ctl as (
      p: number,
      n: number,
    ) => number;
    return { buffer: memory.buffer, simd: true, hasControl: (offset, length) => ctl(offset, length) === 1 };
  } catch {
    const buffer = new SharedArrayBuffer(pages * WASM_PAGE);
    const view = new Uint8Array(buffer);
    return {
      buffer,
      simd: false,
      hasControl(offset, length) {
        for (let i = offset; i < offset + length; i++) if (view[i]! < 0x20) return true;
        return false;
      },
    };
  }
}
