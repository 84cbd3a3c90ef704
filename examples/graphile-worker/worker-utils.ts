/**
 * Worker utils that accept `unique`:  npx tsx examples/graphile-worker/worker-utils.ts
 *
 * A webhook is delivered twice; the second `addJob` is deduplicated and names the first job.
 * Then a newer profile update replaces the pending resize job.
 */
import { makeUniqueWorkerUtils } from 'ojs-unique/graphile-worker';
import { isDuplicateJobError } from 'ojs-unique';
import { GRAPHILE_SCHEMA, UNIQUE_SCHEMA, examplePool, resetExampleSchemas } from './example-connection.js';

const pool = examplePool();
await resetExampleSchemas(pool);
const utils = await makeUniqueWorkerUtils({ pgPool: pool, schema: GRAPHILE_SCHEMA, uniqueSchema: UNIQUE_SCHEMA });
try {
  const webhook = { keys: ['type', 'args'] as const, args_keys: ['event_id'], on_conflict: 'ignore' as const };
  const first = await utils.addJob(
    'process_webhook',
    { event_id: 'evt_1', body: 'first delivery' },
    { unique: { ...webhook, keys: [...webhook.keys] } },
  );
  const second = await utils.addJob(
    'process_webhook',
    { event_id: 'evt_1', body: 'redelivery' },
    { unique: { ...webhook, keys: [...webhook.keys] } },
  );
  console.log(`webhook: ${first.outcome} job ${first.job.id}, then ${second.outcome} -> job ${second.job.id} (${second.job.state})`);

  const resize = { keys: ['type', 'args'] as ('type' | 'args')[], args_keys: ['user_id'], on_conflict: 'replace' as const };
  const old = await utils.addJob(
    'resize_avatar',
    { user_id: 42, url: 'old.jpg' },
    { unique: resize, runAt: new Date(Date.now() + 60_000) },
  );
  const newer = await utils.addJob('resize_avatar', { user_id: 42, url: 'new.jpg' }, { unique: resize });
  if (newer.outcome === 'replaced')
    console.log(`resize: job ${newer.job.id} replaced job ${newer.replaced.id} (now ${newer.replaced.state})`);

  try {
    await utils.addJob('resize_avatar', { user_id: 42, url: 'again.jpg' }, { unique: { ...resize, on_conflict: 'reject' } });
  } catch (error) {
    if (!isDuplicateJobError(error)) throw error;
    console.log(`reject: duplicate of job ${error.existingJobId} (${error.existingJobState})`);
  }
  console.log(`old job ${old.job.id} is ${(await utils.getUniqueJob(old.job.id))?.state}`);
} finally {
  await utils.release();
  await pool.end();
}
