import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scannableMemory } from '../../protocol/control-bytes.ts';

describe('scannableMemory', () => {
  const memory = scannableMemory(256 * 1024);
  const bytes = new Uint8Array(memory.buffer);

  it('is WebAssembly shared memory with the SIMD test on this Node', () => {
    assert.equal(memory.simd, true);
    assert.ok(memory.buffer instanceof SharedArrayBuffer);
    assert.equal(memory.buffer.byteLength, 256 * 1024);
  });

  it('finds a control byte at every position of ranges of every length and alignment, and nothing outside them', () => {
    bytes.fill(0x20);
    for (let start = 0; start < 20; start++) {
      for (let length = 0; length <= 200; length++) {
        assert.equal(memory.hasControl(start, length), false);
        if (start > 0) {
          bytes[start - 1] = 0x0a;
          assert.equal(memory.hasControl(start, length), false, 'a control byte before the range');
          bytes[start - 1] = 0x20;
        }
        bytes[start + length] = 0x00;
        assert.equal(memory.hasControl(start, length), false, 'a control byte after the range');
        bytes[start + length] = 0x20;
        for (let at = start; at < start + length; at++) {
          bytes[at] = 0x1f;
          assert.equal(memory.hasControl(start, length), true, `start ${start} length ${length} at ${at}`);
          bytes[at] = 0x20;
        }
      }
    }
  });

  it('tests every byte value as JavaScript would', () => {
    bytes.fill(0x41);
    for (let value = 0; value < 256; value++) {
      bytes[1000] = value;
      assert.equal(memory.hasControl(900, 4096), value < 0x20, `byte ${value}`);
    }
  });
});
