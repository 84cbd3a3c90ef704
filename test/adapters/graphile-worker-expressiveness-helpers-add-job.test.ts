/**
 * The rows of docs/expressiveness.md through `helpers.addJob` inside a running task wrapped by `withUniqueHelpers`
 * (test/expressiveness), on the file's shared schema pair (graphile-worker-entry-suites.ts).
 */
import { describeGraphileEntrySuite } from './graphile-worker-entry-suites.js';

describeGraphileEntrySuite('expressiveness', 'withUniqueHelpers.addJob', import.meta.url);
