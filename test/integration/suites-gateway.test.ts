import { describeSuites, GATEWAY_SUITES } from './families.ts';

// The gateway suites (routes, translation, usage, safety), on in-process services.
// Each suite was a test file of its own; it keeps its tests, hooks and service, and they run one after another
// in this one process, which loads the service's modules once (test/SPEED.md).
describeSuites(GATEWAY_SUITES);
