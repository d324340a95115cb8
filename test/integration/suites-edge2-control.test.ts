import { withTwoEdgeThreads } from '../helpers/edge-threads.ts';
import { CONTROL_SUITES, describeSuites } from './families.ts';

// The control family (suites-control.test.ts) again with two edge threads (service/edge-threads.ts): each
// in-process service listens from the main thread and one edge thread, and the kernel spreads each suite's
// connections between them.
if (withTwoEdgeThreads()) describeSuites(CONTROL_SUITES);
