/**
 * Batch PUSH is all-or-nothing on every backend, one server each (batch-scenarios.ts).
 */
import { describeBatch } from './batch-scenarios.js';
import { GATEWAY_BACKENDS, startGateway } from './gateway-test-server.js';

for (const backend of GATEWAY_BACKENDS) {
  describeBatch(`gateway batch all-or-nothing: ${backend}`, () => startGateway(backend, 'batch'));
}
