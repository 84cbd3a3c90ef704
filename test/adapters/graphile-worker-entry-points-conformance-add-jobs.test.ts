/**
 * The shared OJS conformance suite through `makeUniqueWorkerUtils` `addJobs` (one entry)
 * (test/conformance/entry-points/graphile-worker-entry-points.ts says how an OJS job maps to its
 * arguments), on the file's shared schema pair (graphile-worker-entry-suites.ts).
 */
import { describeGraphileEntrySuite } from './graphile-worker-entry-suites.js';

describeGraphileEntrySuite('conformance', 'makeUniqueWorkerUtils.addJobs', import.meta.url);
