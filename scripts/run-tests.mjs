// Runs every test file (test/**/*.test.ts) with mocha in parallel: `--parallel`, OJS_TEST_JOBS
// worker processes (default 10: the suite mostly waits on Redis, PostgreSQL and real time, not on
// the CPU). Each worker has a PostgreSQL database of its own (test/run-database.ts); the files
// that take longest start first, so that no long file starts last. Arguments are passed to mocha
// (`node scripts/run-tests.mjs --reporter dot`). `npx mocha <file>` still runs files serially.
// `--build` (npm test): first the type-check and the build, side by side (each tsc keeps one CPU
// busy), then the tests on the built command.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The slowest files, slowest first (measured; a file not listed starts after these). The two
 * real-clock cron overlap files lead: each waits 130 s of real time (the floor of a run), so they
 * must start at once; the CPU-bound files follow, then the real-clock waits of the other parts.
 */
const SLOW_FIRST = [
  'test/gateway/gateway-conformance-graphile-worker-cron-overlap.test.ts',
  'test/gateway/gateway-conformance-bullmq-cron-overlap.test.ts',
  'test/gateway/gateway-two-processes.test.ts',
  'test/property/lifecycle-property.test.ts',
  'test/cli.test.ts',
  'test/gateway/gateway-conformance-bullmq-scheduled.test.ts',
  'test/gateway/gateway-conformance-graphile-worker-scheduled.test.ts',
  'test/adapters/graphile-worker-entry-points-conformance-helpers-add-job.test.ts',
  'test/adapters/graphile-worker-concurrency.test.ts',
  'test/adapters/graphile-worker-entry-points-conformance-add-job-with-client.test.ts',
  'test/adapters/graphile-worker-entry-points-conformance-add-job.test.ts',
  'test/adapters/graphile-worker-expressiveness-helpers-add-job.test.ts',
  'test/adapters/bullmq-entry-points-conformance.test.ts',
  'test/adapters/graphile-worker.test.ts',
  'test/gateway/gateway-cron.test.ts',
  'test/faults/graphile-worker-faults.test.ts',
  'test/adapters/graphile-worker-expressiveness-add-jobs.test.ts',
  'test/adapters/graphile-worker-expressiveness-add-job-with-client.test.ts',
  'test/adapters/graphile-worker-expressiveness-add-job.test.ts',
  'test/adapters/graphile-worker-expressiveness.test.ts',
  'test/adapters/bullmq-expressiveness-add-bulk.test.ts',
  'test/adapters/bullmq-expressiveness-add.test.ts',
  'test/adapters/bullmq-expressiveness.test.ts',
  'test/adapters/graphile-worker-entry-points-conformance-add-jobs.test.ts',
  'test/property/entry-points-property.test.ts',
  'test/adapters/bullmq-cluster.test.ts',
  'test/adapters/replace-bounded-work.test.ts',
  'test/gateway/gateway-conformance-graphile-worker-core.test.ts',
  'test/gateway/gateway-conformance-bullmq-core.test.ts',
  'test/adapters/graphile-worker-adapter.test.ts',
];

const files = readdirSync('test', { recursive: true })
  .map((file) => join('test', String(file)).replaceAll('\\', '/'))
  .filter((file) => file.endsWith('.test.ts'))
  .sort();
const rank = (file) => {
  const index = SLOW_FIRST.indexOf(file);
  return index === -1 ? SLOW_FIRST.length : index;
};
files.sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));

/** `npm run <script>`; resolves to its exit status. */
const npmRun = (script) =>
  new Promise((resolve) => {
    const child = spawn(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', script], { stdio: 'inherit' });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    child.on('error', () => resolve(1));
  });

const build = process.argv.includes('--build');
if (build) {
  const statuses = await Promise.all([npmRun('typecheck'), npmRun('build')]);
  if (statuses.some((status) => status !== 0)) process.exit(1);
}

const jobs = process.env.OJS_TEST_JOBS ?? '10';
// `--built` (or `--build`): the run follows `npm run build`, so the tests start the built command (test/cli-command.ts).
const built = build || process.argv.includes('--built');
const mochaArgs = process.argv.slice(2).filter((arg) => arg !== '--built' && arg !== '--build');
const mocha = join('node_modules', 'mocha', 'bin', 'mocha.js');
const { status, signal } = spawnSync(process.execPath, [mocha, '--parallel', '--jobs', jobs, ...mochaArgs, ...files], {
  stdio: 'inherit',
  env: built ? { ...process.env, OJS_TEST_CLI: 'dist' } : process.env,
});
process.exit(status ?? (signal ? 1 : 0));
