import { it } from 'node:test';
import { chooseEdge } from '../../edge/http/choose-edge.ts';
import { loadNativeUws } from '../../edge/http/uws-load.ts';

// edge-connections.suite.ts again, on the edge `auto` does not choose here, so that both edges keep the same
// connection rules: uWebSockets.js where a build loads that `auto` passes over (uws-pack on Debian 12's glibc),
// node:http where `auto` chooses uWebSockets.js (glibc 2.38+). suites-control.test.ts runs it on the default.

const byDefault = chooseEdge('auto').edge;
if (!('uws' in loadNativeUws())) {
  it(
    'runs in edge-connections.suite.ts (suites-control.test.ts), which serves on node:http here',
    { skip: 'no native uWebSockets.js build loads here' },
    () => undefined,
  );
} else {
  process.env.SWITCHYARD_EDGE = byDefault === 'node:http' ? 'uws' : 'node';
  await import('./edge-connections.suite.ts');
}
