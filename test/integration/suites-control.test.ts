import { CONTROL_SUITES, describeSuites } from './families.ts';

// The control-plane and edge suites, on in-process services.
// Each suite was a test file of its own; it keeps its tests, hooks and service, and they run one after another
// in this one process, which loads the service's modules once (test/SPEED.md).
describeSuites(CONTROL_SUITES);
