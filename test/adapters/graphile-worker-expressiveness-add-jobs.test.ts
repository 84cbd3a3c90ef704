/**
 * The rows of docs/expressiveness.md through `makeUniqueWorkerUtils` `addJobs` (one entry)
 * (test/expressiveness), on the file's shared schema pair (graphile-worker-entry-suites.ts).
 */
import { describeGraphileEntrySuite } from './graphile-worker-entry-suites.js';

describeGraphileEntrySuite('expressiveness', 'makeUniqueWorkerUtils.addJobs', import.meta.url);
