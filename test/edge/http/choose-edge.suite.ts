import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseEdge, parseEdgeMode, parseEdgeThreads } from '../../../edge/http/choose-edge.ts';
import { loadNativeUws, type Uws } from '../../../edge/http/uws-load.ts';

// Which edge serves: SWITCHYARD_EDGE's values, the native build when one loads, node:http otherwise, and
// why a native build did not load. No socket: server*.suite.ts drive both edges over real connections.

const fakeUws = {} as Uws;
const unusedLoad = () => {
  throw new Error('SWITCHYARD_EDGE=node must not try to load a native build');
};

describe('SWITCHYARD_EDGE', () => {
  it('is auto when unset or empty, and accepts node and uws', () => {
    assert.equal(parseEdgeMode(undefined), 'auto');
    assert.equal(parseEdgeMode(''), 'auto');
    assert.equal(parseEdgeMode('node'), 'node');
    assert.equal(parseEdgeMode('uws'), 'uws');
  });

  it('refuses any other value, naming the allowed ones and a bounded echo of the value', () => {
    assert.throws(() => parseEdgeMode('Node'), /must be one of auto, node, uws, not "Node"/);
    assert.throws(
      () => parseEdgeMode('x'.repeat(5000)),
      (err: Error) => err.message.length < 200,
    );
  });
});

describe('SWITCHYARD_EDGE_THREADS', () => {
  it('is one thread up to four cores when unset, empty or auto, and a quarter of them above, at most 8', () => {
    for (const value of [undefined, '', 'auto']) {
      assert.equal(parseEdgeThreads(value, 2), 1);
      assert.equal(parseEdgeThreads(value, 4), 1);
      assert.equal(parseEdgeThreads(value, 16), 4);
      assert.equal(parseEdgeThreads(value, 64), 8);
    }
  });

  it('takes a count from 1 to 32 and refuses anything else with a bounded echo', () => {
    assert.equal(parseEdgeThreads('1', 16), 1);
    assert.equal(parseEdgeThreads('32', 2), 32);
    for (const bad of ['0', '33', '-1', '1.5', '2 ', ' 2', 'two', '0x2', '1e1', '007'])
      assert.throws(
        () => parseEdgeThreads(bad, 2),
        /SWITCHYARD_EDGE_THREADS must be auto or a count from 1 to 32/,
        bad,
      );
    assert.throws(
      () => parseEdgeThreads('9'.repeat(5000), 2),
      (err: Error) => err.message.length < 200,
    );
  });
});

describe('chooseEdge', () => {
  it('takes the native build that loads when it answers every request', () => {
    const build = '@btc-vision/uwebsockets.js@20.57.0';
    const choice = chooseEdge('auto', () => ({ build, uws: fakeUws, answersAll: true }));
    assert.deepEqual(choice, { edge: 'uWebSockets.js', uws: fakeUws, build });
  });

  it('passes over a build that leaves requests unanswered on auto, and takes it on uws', () => {
    const build = 'uws-pack@20.0.8';
    const load = () => ({ build, uws: fakeUws, answersAll: false });
    const auto = chooseEdge('auto', load);
    assert.equal(auto.edge, 'node:http');
    assert.equal(auto.passedOver, build);
    assert.notEqual(auto.uws, fakeUws);
    assert.deepEqual(chooseEdge('uws', load), { edge: 'uWebSockets.js', uws: fakeUws, build });
  });

  it('falls back to node:http with the reasons when none loads, unless uws is required', () => {
    const failures = [
      '@btc-vision/uwebsockets.js: uws_linux_x64_137.node does not load (GLIBC_2.38 not found)',
      'uws-pack: uws_linux_x64_137.node does not load (no such file)',
    ];
    const choice = chooseEdge('auto', () => ({ failures }));
    assert.equal(choice.edge, 'node:http');
    assert.deepEqual(choice.failures, failures);
    assert.equal(typeof (choice.uws as unknown as { App: unknown }).App, 'function');
    assert.throws(
      () => chooseEdge('uws', () => ({ failures })),
      /no native uWebSockets\.js build loads: @btc-vision\/uwebsockets\.js: .*GLIBC_2\.38/,
    );
  });

  it('node never loads a native build', () => {
    assert.equal(chooseEdge('node', unusedLoad).edge, 'node:http');
  });
});

describe('loadNativeUws', () => {
  it('says per package whether it is missing or its binary for this Node.js does not load', () => {
    const result = loadNativeUws([
      { name: '@switchyard/no-such-package', binaries: (dir) => dir, answersAll: true },
      // A package without uWS binaries stands in for a build without one for this Node ABI.
      { name: 'pino', binaries: (dir) => dir, answersAll: true },
    ]);
    assert.ok('failures' in result);
    assert.equal(result.failures[0], '@switchyard/no-such-package: not installed');
    assert.match(
      result.failures[1]!,
      new RegExp(`^pino: uws_${process.platform}_${process.arch}_${process.versions.modules}\\.node does not load \\(`),
    );
  });

  it('loads a native build here or says why both did not (never the pure-JS fallback)', () => {
    const result = loadNativeUws();
    if ('uws' in result) {
      assert.match(result.build, /^@?(btc-vision\/uwebsockets\.js|uws-pack)@\d+\.\d+/);
      assert.equal(typeof result.uws.App, 'function');
      // A pure-JS stand-in would be a JS class; the native module's App is a native function.
      assert.match(Function.prototype.toString.call(result.uws.App), /\[native code\]/);
    } else assert.equal(result.failures.length, 2);
  });
});
