/**
 * Workflows (chain, group, batch) beyond the conformance suite, on every backend, one server each
 * (workflow-scenarios.ts); the two-process runs are in gateway-two-processes.test.ts.
 */
import { describeWorkflows } from './workflow-scenarios.js';
import { GATEWAY_BACKENDS, startGateway } from './gateway-test-server.js';

for (const backend of GATEWAY_BACKENDS) {
  describeWorkflows(`gateway workflows: ${backend}`, () => startGateway(backend, 'workflows'));
}
