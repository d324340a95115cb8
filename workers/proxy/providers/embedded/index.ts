import type { ProviderAdapter } from '../types.ts';

// The embedded runtime runs inside the service: no HTTP, no credential, and its models are the ones the
// service loaded, so there is no upstream list to read (workers/runtime owns it).
export const embedded: ProviderAdapter = { authHeaders: () => ({}), models: null, gateway: null };
