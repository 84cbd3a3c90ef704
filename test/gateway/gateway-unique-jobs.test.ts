/**
 * The unique-jobs spec's §14 conformance list (11 scenarios) over HTTP, on every backend the
 * gateway serves: one server per backend, reset before each test (unique-jobs-scenarios.ts).
 */
import { GATEWAY_BACKENDS, startGateway } from './gateway-test-server.js';
import { describeUniqueJobs } from './unique-jobs-scenarios.js';

for (const backend of GATEWAY_BACKENDS) {
  describeUniqueJobs(`gateway §14 unique jobs over HTTP: ${backend}`, () => startGateway(backend, 'uniq'), { ownEvents: true });
}
