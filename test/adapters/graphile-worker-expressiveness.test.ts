/**
 * The rows of docs/expressiveness.md on Graphile Worker (test/expressiveness): through the
 * backend (one migrated schema pair for the file, its rows deleted before each test, kept on
 * failure), and through each entry point users call (a schema pair per test).
 */
import { fileURLToPath } from 'node:url';
import { createGraphileWorkerSubject } from '../conformance/subjects/graphile-worker.js';
import { describeExpressiveness } from '../expressiveness/describe-expressiveness.js';
import { createGraphileEntrySubject, GRAPHILE_ENTRY_POINTS } from '../conformance/entry-points/graphile-worker-entry-points.js';
import { SharedSchemaPair, schemasFor } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);
const pair = new SharedSchemaPair(FILE);
after(async () => {
  await pair.close();
});

describeExpressiveness('graphile-worker', async () => {
  const subject = await createGraphileWorkerSubject({ ...(await pair.next()), fresh: false });
  return {
    ...subject,
    async close(result?: { passed: boolean }) {
      pair.done(!result?.passed);
      // The pair outlives the test: the subject never drops it.
      await subject.close({ passed: false });
    },
  };
});

for (const entry of GRAPHILE_ENTRY_POINTS) {
  describeExpressiveness(`graphile-worker ${entry}`, ({ title }) => createGraphileEntrySubject(entry, schemasFor(FILE, title)));
}
