import { it } from 'node:test';
import { loadNativeUws } from '../../edge/http/uws-load.ts';

// edge-connections.suite.ts again, on the node:http edge (what Node 22/24 get where no native uWebSockets.js
// build loads), so that both edges keep the same connection rules. Where no native build loads, that file
// already runs on node:http (in suites-control.test.ts).

if ('uws' in loadNativeUws()) {
  process.env.SWITCHYARD_EDGE = 'node';
  await import('./edge-connections.suite.ts');
} else {
  it(
    'runs in edge-connections.suite.ts (suites-control.test.ts), which serves on node:http here',
    { skip: 'no native uWebSockets.js build loads here' },
    () => undefined,
  );
}
