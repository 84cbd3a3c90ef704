/**
 * `ojs-unique doctor` through the real CLI: a Redis of the test's own with an evicting
 * `maxmemory-policy` and a sidecar namespace of another layout is reported (exit 1, one problem
 * line each); a healthy deployment (a noeviction Redis of its own, migrated schemas) is all ok
 * (exit 0). Never CONFIG SET on the shared Redis.
 */
import { spawnSync } from 'node:child_process';
import { userInfo } from 'node:os';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { startOwnRedis } from './adapters/bullmq-own-redis.js';
import { cliArgs } from './cli-command.js';
import { isolatePerTest } from './adapters/graphile-worker-fixture.js';
import { databaseUrl } from './conformance/subjects/graphile-worker.js';

const FILE = fileURLToPath(import.meta.url);

/** Without the runner's REDIS_URL/DATABASE_URL: only the stores a test names are checked. */
function cli(args: string[], without: string[] = []) {
  const { REDIS_URL: _redis, DATABASE_URL: _database, ...env } = process.env;
  for (const name of without) delete env[name];
  const result = spawnSync(process.execPath, cliArgs(...args), { encoding: 'utf8', env });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('ojs-unique doctor', function () {
  this.timeout(90_000);
  const schemas = isolatePerTest(FILE);

  it('an evicting maxmemory-policy and a sidecar of another layout are problems with their fix (exit 1)', async () => {
    const own = await startOwnRedis(['--maxmemory-policy', 'allkeys-lru']);
    try {
      const redis = new Redis(own.url);
      await redis.set('app:ojs:global:layout', '0');
      await redis.set('app:mail:ojs:layout', '1');
      await redis.quit();
      const { status, stdout } = cli(['doctor', '--redis-url', own.url, '--prefix', 'app']);
      const lines = stdout.trim().split('\n');
      expect(status, stdout).to.equal(1);
      expect(lines.filter((line) => line.startsWith('problem'))).to.deep.equal([
        "problem  maxmemory-policy is allkeys-lru: Redis may evict BullMQ's jobs and the uniqueness index, letting duplicates in (fix: set maxmemory-policy noeviction)",
        'problem  1 sidecar namespace(s) under prefix "app" are at layout 0, this package writes layout 1 (fix: run every producer on one ojs-unique release; see docs/bullmq.md on layout versions)',
      ]);
      expect(lines.filter((line) => !line.startsWith('ok') && !line.startsWith('problem'))).to.deep.equal([]);
    } finally {
      await own.stop();
    }
  });

  it('a healthy deployment is all ok (exit 0); an unknown option is bad usage (exit 2)', async () => {
    const own = await startOwnRedis();
    try {
      const { graphileSchema, uniqueSchema } = schemas.current();
      const { status, stdout } = cli([
        'doctor',
        '--redis-url',
        own.url,
        '--database-url',
        databaseUrl(),
        '--graphile-schema',
        graphileSchema,
        '--unique-schema',
        uniqueSchema,
      ]);
      expect(status, stdout).to.equal(0);
      const lines = stdout.trim().split('\n');
      expect(lines.every((line) => line.startsWith('ok '))).to.equal(true);
      expect(lines.some((line) => line.includes(`adapter schema "${uniqueSchema}" is at schema version`))).to.equal(true);
      expect(lines.some((line) => line.includes('keeps its session'))).to.equal(true);
    } finally {
      await own.stop();
    }
    expect(cli(['doctor', '--bogus']).status).to.equal(2);
  });

  it('connects as the OS user where the URL names none and $USER and $PGUSER are unset (as psql)', () => {
    const url = new URL(databaseUrl());
    url.username = '';
    const { stdout } = cli(['doctor', '--database-url', url.href], ['USER', 'PGUSER']);
    expect(stdout).to.include(`connected as role "${userInfo().username}"`);
  });
});
