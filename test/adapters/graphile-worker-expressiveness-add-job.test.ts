/**
 * The rows of docs/expressiveness.md through `makeUniqueWorkerUtils` `addJob`
 * (test/expressiveness), on the file's shared schema pair (graphile-worker-entry-suites.ts).
 */
import { describeGraphileEntrySuite } from './graphile-worker-entry-suites.js';

describeGraphileEntrySuite('expressiveness', 'makeUniqueWorkerUtils.addJob', import.meta.url);
