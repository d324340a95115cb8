// The runtime worker starts here. Worker threads do not inherit the main thread's TypeScript loader
// (bin/switchyard.js registers it), so this registers it again, as workers/proxy/relay-entry.js does.
import { register } from 'tsx/esm/api';

register();
await import('./runtime-worker.ts');
