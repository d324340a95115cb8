// Piscina loads this plain-JS file in each proxy worker. The main thread registered the TypeScript loader
// for itself (bin/switchyard.js); worker threads do not inherit that, so each registers it again here.
import { register } from 'tsx/esm/api';

register();
const { default: run } = await import('./worker.ts');
export default run;
