/**
 * `ojs-unique migrate`: installs or upgrades Graphile Worker's schema and the adapter's, as its
 * own deploy step, so the application can run as a role that may not create anything (see
 * "Separate install and runtime roles" in docs/graphile-worker.md).
 *
 *   ojs-unique migrate [--database-url <url>] [--graphile-schema <s>] [--unique-schema <s>]
 *
 * `DATABASE_URL` is read when `--database-url` is absent. Exit codes: 0 installed or already
 * current, 2 for bad usage, 1 when the database refused (the message says why).
 */
import { parseArgs } from 'node:util';

export const MIGRATE_USAGE = `usage:
  ojs-unique migrate [--database-url <url>] [--graphile-schema <Graphile Worker schema>] [--unique-schema <adapter schema>]`;

export async function migrate(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(MIGRATE_USAGE);
    return 0;
  }
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        'database-url': { type: 'string' },
        'graphile-schema': { type: 'string' },
        'unique-schema': { type: 'string' },
      },
      strict: true,
    }));
  } catch (error) {
    console.error(`ojs-unique migrate: ${(error as Error).message}\n${MIGRATE_USAGE}`);
    return 2;
  }
  const connectionString = values['database-url'] ?? env.DATABASE_URL;
  if (!connectionString) {
    console.error(`ojs-unique migrate: give the database (--database-url or DATABASE_URL)\n${MIGRATE_USAGE}`);
    return 2;
  }
  try {
    const { runGatewayMigrations } = await import('../server/graphile-worker-migrate.js');
    const result = await runGatewayMigrations({
      connectionString,
      ...(values['graphile-schema'] ? { workerSchema: values['graphile-schema'] } : {}),
      ...(values['unique-schema'] ? { uniqueSchema: values['unique-schema'] } : {}),
    });
    console.log(
      `Graphile Worker schema "${result.schemas.workerSchema}" migrated; ojs-unique schema "${result.schemas.uniqueSchema}" ` +
        `at schema version ${result.version} (${result.functions ? 'installed or upgraded' : 'already current'}); the OJS gateway's tables ` +
        `at version ${result.gatewayVersion}`,
    );
    return 0;
  } catch (error) {
    console.error(`ojs-unique migrate: ${(error as Error).message}`);
    return 1;
  }
}
