// Loads another installed BullMQ as `bullmq`, for the CI matrix:
//
//   OJS_BULLMQ_PACKAGE=bullmq-oldest NODE_OPTIONS="--import ./scripts/use-bullmq.mjs" npx mocha …
//
// `bullmq-oldest` is an npm alias devDependency (package.json). Every `import` and `require` of
// `bullmq` and `bullmq/…` (the adapter's, the tests', and those of the processes they spawn, which
// inherit NODE_OPTIONS) then loads it; the adapter's deep require of BullMQ's scripts follows,
// since it is resolved from where `bullmq` resolves (adapters/bullmq/bullmq-host.ts). Both module
// systems are redirected because tsx loads a test file through `require` when it can.
import Module, { register } from 'node:module';

const target = process.env.OJS_BULLMQ_PACKAGE;
if (target && target !== 'bullmq') {
  const redirect = (request) => (request === 'bullmq' || request.startsWith('bullmq/') ? target + request.slice('bullmq'.length) : request);
  register('./use-bullmq-hooks.mjs', import.meta.url, { data: { target } });
  // CommonJS has no resolve hook on Node 20: its resolver, wrapped (test tooling only).
  const resolveFilename = Module._resolveFilename;
  Module._resolveFilename = function (request, ...rest) {
    return resolveFilename.call(this, redirect(request), ...rest);
  };
}
