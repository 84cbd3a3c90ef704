/**
 * The shared OJS conformance suite on Graphile Worker: the file shares one migrated pair of
 * schemas (Graphile's and the adapter's) whose rows are deleted before each test, a real Graphile
 * runner drives the lifecycle, and a failed test's schemas are kept for inspection (the rest of
 * the file moves to a new pair).
 */
import { fileURLToPath } from 'node:url';
import { createGraphileWorkerSubject } from '../conformance/subjects/graphile-worker.js';
import { describeConformance } from '../conformance/describe-conformance.js';
import { SharedSchemaPair } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);

const pair = new SharedSchemaPair(FILE);
// A root hook (the titles stay those of the other backends' suites): the pair goes after the run.
after(async () => {
  await pair.close();
});

describeConformance('graphile-worker', async () => {
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
