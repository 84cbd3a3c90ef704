/**
 * How tests start the `ojs-unique` command: the built one (`dist/cli/ojs-unique.js`, what the
 * package's `bin` runs) when the run has just built it (`npm test`: scripts/run-tests.mjs
 * `--built` sets OJS_TEST_CLI=dist), else from source through tsx (`npx mocha test/cli.test.ts`
 * on its own). A built start costs a fraction of a source one, and the suite starts the command
 * dozens of times.
 */
export function cliArgs(...args: string[]): string[] {
  return process.env.OJS_TEST_CLI === 'dist' ? ['dist/cli/ojs-unique.js', ...args] : ['--import', 'tsx', 'cli/ojs-unique.ts', ...args];
}
