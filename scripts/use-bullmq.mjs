// Loads another installed BullMQ as `bullmq`, for the CI matrix:
//
//   OJS_BULLMQ_PACKAGE=bullmq-oldest NODE_OPTIONS="--import ./scripts/use-bullmq.mjs" npx mocha …
//
// `bullmq-oldest` is an npm alias devDependency (package.json). Every `import … from 'bullmq'`
// (and 'bullmq/…') of the adapter, the tests and processes they spawn resolves to it; the
// adapter's deep require of BullMQ's scripts follows, since it is resolved from where `bullmq`
// resolves (adapters/bullmq/bullmq-host.ts).
import { register } from 'node:module';

const target = process.env.OJS_BULLMQ_PACKAGE;
if (target && target !== 'bullmq') {
  register('./use-bullmq-hooks.mjs', import.meta.url, { data: { target } });
}
