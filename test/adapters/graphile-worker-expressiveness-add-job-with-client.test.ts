/**
 * The rows of docs/expressiveness.md through `addJobWithClient` inside the caller's BEGIN … COMMIT
 * (test/expressiveness), on the file's shared schema pair (graphile-worker-entry-suites.ts).
 */
import { describeGraphileEntrySuite } from './graphile-worker-entry-suites.js';

describeGraphileEntrySuite('expressiveness', 'addJobWithClient', import.meta.url);
