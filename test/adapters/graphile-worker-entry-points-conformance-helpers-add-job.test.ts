/**
 * The shared OJS conformance suite through `helpers.addJob` inside a running task wrapped by `withUniqueHelpers`
 * (test/conformance/entry-points/graphile-worker-entry-points.ts says how an OJS job maps to its
 * arguments), on the file's shared schema pair (graphile-worker-entry-suites.ts).
 */
import { describeGraphileEntrySuite } from './graphile-worker-entry-suites.js';

describeGraphileEntrySuite('conformance', 'withUniqueHelpers.addJob', import.meta.url);
