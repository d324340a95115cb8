import { withTwoEdgeThreads } from '../helpers/edge-threads.ts';
import { describeSuites, GATEWAY_SUITES } from './families.ts';

// The gateway family (suites-gateway.test.ts) again with two edge threads (service/edge-threads.ts): each
// in-process service listens from the main thread and one edge thread, and the kernel spreads each suite's
// connections between them.
if (withTwoEdgeThreads()) describeSuites(GATEWAY_SUITES);
