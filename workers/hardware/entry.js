// The hardware worker starts here. The main thread registered the TypeScript loader for itself
// (bin/switchyard.js); worker threads do not inherit that, so this one registers it again.
import { register } from 'tsx/esm/api';

register();
await import('./worker.ts');
