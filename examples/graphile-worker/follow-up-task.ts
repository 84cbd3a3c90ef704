/**
 * A task that enqueues unique follow-up jobs:  npx tsx examples/graphile-worker/follow-up-task.ts
 *
 * Three `order_paid` jobs for the same customer each ask for a `send_receipt_digest` follow-up;
 * the digest is unique per customer while it waits (`ignore`), so the customer gets one.
 * `withUniqueHelpers` lets `helpers.addJob` take `unique`; the preset installs the adapter's
 * schema and trigger whenever the worker migrates.
 */
import { Logger, runOnce } from 'graphile-worker';
import { makeUniqueJobsPreset, makeUniqueWorkerUtils, withUniqueHelpers } from 'ojs-unique/graphile-worker';
import { GRAPHILE_SCHEMA, UNIQUE_SCHEMA, examplePool, resetExampleSchemas } from './example-connection.js';

/** Graphile's per-job INFO lines would interleave with the example's output. */
const quietLogger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') console.error(message);
});

const pool = examplePool();
await resetExampleSchemas(pool);
const utils = await makeUniqueWorkerUtils({ pgPool: pool, schema: GRAPHILE_SCHEMA, uniqueSchema: UNIQUE_SCHEMA });
try {
  for (const order of [1, 2, 3]) await utils.addJob('order_paid', { customer: 'c-7', order });

  const taskList = withUniqueHelpers(
    {
      order_paid: async (payload, helpers) => {
        const { customer, order } = payload as { customer: string; order: number };
        const digest = await helpers.addJob(
          'send_receipt_digest',
          { customer },
          // Due in ten minutes: every order paid meanwhile joins the same digest.
          { runAt: new Date(Date.now() + 600_000), unique: { keys: ['type', 'args'], on_conflict: 'ignore' } },
        );
        console.log(`order ${order}: digest ${digest.outcome} (job ${digest.job.id})`);
      },
    },
    { uniqueSchema: UNIQUE_SCHEMA, workerSchema: GRAPHILE_SCHEMA },
  );
  await runOnce({
    pgPool: pool,
    logger: quietLogger,
    schema: GRAPHILE_SCHEMA,
    taskList,
    preset: { extends: [makeUniqueJobsPreset({ uniqueSchema: UNIQUE_SCHEMA })] },
  });
} finally {
  await utils.release();
  await pool.end();
}
