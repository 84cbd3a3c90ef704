/**
 * The shared OJS conformance suite through `addJobWithClient` inside the caller's BEGIN … COMMIT
 * (test/conformance/entry-points/graphile-worker-entry-points.ts says how an OJS job maps to its
 * arguments), on the file's shared schema pair (graphile-worker-entry-suites.ts).
 */
import { describeGraphileEntrySuite } from './graphile-worker-entry-suites.js';

describeGraphileEntrySuite('conformance', 'addJobWithClient', import.meta.url);
