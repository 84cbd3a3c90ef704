'use strict';
// Tests run from TypeScript source through tsx's loader: no build step between an edit and a run.
// Timeouts are set per suite where a backend needs more (see test/conformance).
module.exports = {
  'node-option': ['import=tsx'],
  spec: ['test/**/*.test.ts'],
  extension: ['ts'],
  forbidOnly: Boolean(process.env.CI),
  timeout: 10000,
  reporter: 'spec',
};
