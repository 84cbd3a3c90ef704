/**
 * The rows of docs/expressiveness.md on Graphile Worker (test/expressiveness) through the backend:
 * one migrated schema pair for the file, its rows deleted before each test, kept on failure.
 * Through each entry point users call: graphile-worker-expressiveness-*.test.ts.
 */
import { fileURLToPath } from 'node:url';
import { createGraphileWorkerSubject } from '../conformance/subjects/graphile-worker.js';
import { describeExpressiveness } from '../expressiveness/describe-expressiveness.js';
import { SharedSchemaPair } from './graphile-worker-fixture.js';

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
