/**
 * The public OJS conformance suites (level 0, and level 4 `unique` and `bulk`) against the
 * gateway on the memory backend, one server for the file.
 */
import { describeConformance } from './gateway-conformance.js';
import { createMemoryGatewayStore } from '../../server/memory-gateway-store.js';

describeConformance('memory', async () => createMemoryGatewayStore());
