/**
 * The conformance suite and the docs/expressiveness.md rows through one Graphile Worker entry
 * point (test/conformance/entry-points/graphile-worker-entry-points.ts), on the file's shared
 * schema pair (graphile-worker-fixture.ts: migrated once, rows reset before each test, kept when a
 * test fails). A file per entry point, so that mocha's parallel workers run them side by side.
 */
import { fileURLToPath } from 'node:url';
import { createGraphileEntrySubject, type GraphileEntryPoint } from '../conformance/entry-points/graphile-worker-entry-points.js';
import { describeConformance } from '../conformance/describe-conformance.js';
import { describeExpressiveness } from '../expressiveness/describe-expressiveness.js';
import { onSharedPair, SharedSchemaPair } from './graphile-worker-fixture.js';

export function describeGraphileEntrySuite(suite: 'conformance' | 'expressiveness', entry: GraphileEntryPoint, fileUrl: string): void {
  const pair = new SharedSchemaPair(fileURLToPath(fileUrl));
  // A root hook (the titles stay those of the other backends' suites): the pair goes after the file.
  after(async () => {
    await pair.close();
  });
  const subject = onSharedPair(pair, (schemas) => createGraphileEntrySubject(entry, schemas, { fresh: false }));
  if (suite === 'conformance') describeConformance(`graphile-worker ${entry}`, subject);
  else describeExpressiveness(`graphile-worker ${entry}`, subject);
}
