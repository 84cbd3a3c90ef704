/**
 * A unique job in your own transaction:  npx tsx examples/graphile-worker/transactional-enqueue.ts
 *
 * The order row, the job and its uniqueness record commit together, or not at all.
 */
import { addJobWithClient, makeUniqueWorkerUtils } from 'ojs-unique/graphile-worker';
import { GRAPHILE_SCHEMA, SHOP_SCHEMA, UNIQUE_SCHEMA, examplePool, resetExampleSchemas } from './example-connection.js';

const pool = examplePool();
await resetExampleSchemas(pool);
// Creating the utils migrates Graphile Worker and installs the adapter's schema once.
const utils = await makeUniqueWorkerUtils({ pgPool: pool, schema: GRAPHILE_SCHEMA, uniqueSchema: UNIQUE_SCHEMA });
await pool.query(`create schema ${SHOP_SCHEMA}; create table ${SHOP_SCHEMA}.orders (id int primary key, total int not null)`);
const options = { uniqueSchema: UNIQUE_SCHEMA, workerSchema: GRAPHILE_SCHEMA };

async function placeOrder(id: number, fail: boolean): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    await client.query(`insert into ${SHOP_SCHEMA}.orders (id, total) values ($1, $2)`, [id, 100]);
    const result = await addJobWithClient(
      client,
      'invoice_order',
      { order: id },
      { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } },
      options,
    );
    if (fail) throw new Error('payment declined');
    await client.query('commit');
    console.log(`order ${id}: committed, invoice job ${result.job.id} ${result.outcome}`);
  } catch (error) {
    await client.query('rollback');
    console.log(`order ${id}: rolled back (${(error as Error).message}); invoice job gone with it`);
  } finally {
    client.release();
  }
}

try {
  await placeOrder(1, false);
  await placeOrder(2, true);
  const jobs = await pool.query(`select count(*)::int as n from ${GRAPHILE_SCHEMA}.jobs where task_identifier = 'invoice_order'`);
  const orders = await pool.query(`select count(*)::int as n from ${SHOP_SCHEMA}.orders`);
  console.log(`orders: ${orders.rows[0].n}, invoice jobs in Graphile Worker: ${jobs.rows[0].n}`);
} finally {
  await utils.release();
  await pool.end();
}
