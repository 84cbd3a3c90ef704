/**
 * The shared OJS conformance suite through the entry points Graphile Worker users call:
 * `makeUniqueWorkerUtils` `addJob` and `addJobs`, `addJobWithClient` inside the caller's
 * BEGIN … COMMIT, and `helpers.addJob` inside a running task wrapped by `withUniqueHelpers`
 * (test/conformance/entry-points/graphile-worker-entry-points.ts says how an OJS job maps to
 * their arguments). Same isolation as graphile-worker.test.ts: a schema pair per test, kept when it fails.
 */
import { fileURLToPath } from 'node:url';
import { createGraphileEntrySubject, GRAPHILE_ENTRY_POINTS } from '../conformance/entry-points/graphile-worker-entry-points.js';
import { describeConformance } from '../conformance/describe-conformance.js';
import { schemasFor } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);

for (const entry of GRAPHILE_ENTRY_POINTS) {
  describeConformance(`graphile-worker ${entry}`, ({ title }) => createGraphileEntrySubject(entry, schemasFor(FILE, title)));
}
