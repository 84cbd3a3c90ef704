/**
 * The shared OJS conformance suite on Graphile Worker: each test gets its own pair of schemas
 * (Graphile's and the adapter's), a real Graphile runner drives the lifecycle, and a failed
 * test's schemas are kept for inspection.
 */
import { fileURLToPath } from 'node:url';
import { createGraphileWorkerSubject } from '../../examples/demo-backends/graphile-worker.js';
import { describeConformance } from '../conformance/describe-conformance.js';
import { schemasFor } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);

describeConformance('graphile-worker', ({ title }) => createGraphileWorkerSubject({ ...schemasFor(FILE, title), fresh: true }));
