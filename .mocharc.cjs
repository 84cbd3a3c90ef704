'use strict';
// Tests run from TypeScript source through tsx's loader: no build step between an edit and a run.
// No `spec` here: mocha would add it to the files named on the command line, so
// `npx mocha test/adapters/memory.test.ts` could not run one file. `npm test` names the glob.
// Timeouts are set per suite where a backend needs more (see test/conformance).
// `require`: a root hook that removes what a passing run left under its salt (test/run-leftovers.ts).
module.exports = {
  'node-option': ['import=tsx'],
  require: ['test/run-leftovers.ts'],
  extension: ['ts'],
  forbidOnly: Boolean(process.env.CI),
  timeout: 10000,
  reporter: 'spec',
};
