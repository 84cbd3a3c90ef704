/**
 * `ojs-unique doctor`: checks a deployment and says what is wrong in plain words, one line per
 * check, `ok …` or `problem … (fix: …)` (the checks: server/deployment-doctor.ts). Reads only.
 *
 *   ojs-unique doctor [--redis-url <url>] [--prefix <p>] [--database-url <url>] [--graphile-schema <s>] [--unique-schema <s>]
 *
 * `REDIS_URL` and `DATABASE_URL` are read when the flags are absent. Exit codes: 0 all ok, 1 a
 * problem, 2 bad usage.
 */
import { parseArgs } from 'node:util';

export const DOCTOR_USAGE = `usage:
  ojs-unique doctor [--redis-url <url>] [--prefix <BullMQ key prefix>]
                    [--database-url <url>] [--graphile-schema <s>] [--unique-schema <s>]
  Checks the installed bullmq and graphile-worker, and the Redis and/or PostgreSQL given:
  Redis version and maxmemory-policy, the BullMQ sidecar layout under the prefix, the adapter
  schema's version, the role's privileges, a transaction-mode pooler.
  Prints "ok …" or "problem … (fix: …)" per check; exit 0 all ok, 1 a problem, 2 bad usage.`;

export async function doctor(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(DOCTOR_USAGE);
    return 0;
  }
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        'redis-url': { type: 'string' },
        prefix: { type: 'string' },
        'database-url': { type: 'string' },
        'graphile-schema': { type: 'string' },
        'unique-schema': { type: 'string' },
      },
      strict: true,
    }));
  } catch (error) {
    console.error(`ojs-unique doctor: ${(error as Error).message}\n${DOCTOR_USAGE}`);
    return 2;
  }
  const { runDoctor } = await import('../server/deployment-doctor.js');
  const findings = await runDoctor({
    redisUrl: values['redis-url'] ?? env.REDIS_URL,
    databaseUrl: values['database-url'] ?? env.DATABASE_URL,
    ...(values.prefix !== undefined ? { prefix: values.prefix } : {}),
    ...(values['graphile-schema'] !== undefined ? { graphileSchema: values['graphile-schema'] } : {}),
    ...(values['unique-schema'] !== undefined ? { uniqueSchema: values['unique-schema'] } : {}),
  });
  for (const finding of findings) {
    console.log(finding.status === 'ok' ? `ok       ${finding.what}` : `problem  ${finding.what} (fix: ${finding.fix})`);
  }
  return findings.some((finding) => finding.status === 'problem') ? 1 : 0;
}
