import { withTwoEdgeThreads } from '../helpers/edge-threads.ts';
import { EDGE2_CONTROL_SUITES, describeSuites } from './families.ts';

// The control family's suites that depend on the thread serving them (suites-control.test.ts; the list is in
// families.ts) again with two edge threads (service/edge-threads.ts): each in-process service listens from the
// main thread and one edge thread, and the kernel spreads each suite's connections between them.
if (withTwoEdgeThreads()) describeSuites(EDGE2_CONTROL_SUITES);
