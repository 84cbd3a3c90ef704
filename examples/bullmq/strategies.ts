/**
 * OJS unique jobs on an existing BullMQ queue: wrap it, then use each conflict strategy.
 *
 *   npx tsx examples/bullmq/strategies.ts        # Redis from REDIS_URL (default redis://127.0.0.1:6379)
 *
 * Uses the key prefix `ojs-example:strategies` (`ojs-example:strategies:<OJS_EXAMPLE_SALT>` when that is set, as the
 * tests do so that two runs on one Redis never share keys) and deletes it at the end.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createBullMQBackend, removeUniquenessIndex, withUniqueness, type UniqueOutcome } from 'ojs-unique/bullmq';
import { isDuplicateJobError, type UniquePolicyInput } from 'ojs-unique';

const connection = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
const prefix = ['ojs-example:strategies', process.env.OJS_EXAMPLE_SALT].filter(Boolean).join(':');

// The queue your code already has. Nothing about it changes: plain adds stay plain adds.
const emails = new Queue('emails', { connection, prefix });
const queue = withUniqueness(emails);
// The OJS view of the same jobs (getJob with OJS states, including cancelled records).
const backend = createBullMQBackend({ connection, prefix });

// `replaced`: the job the add superseded, as it is now (a waiting one cancelled).
const show = (label: string, job: { id?: string; unique?: UniqueOutcome }) =>
  console.log(
    `${label.padEnd(44)} -> ${job.unique?.outcome ?? 'plain'} ${job.id}${job.unique?.replaced ? ` (${job.unique.replaced.state} ${job.unique.replaced.id})` : ''}`,
  );

// reject (the default): a duplicate throws DuplicateJobError naming the existing job.
const welcome = { keys: ['type', 'args'], args_keys: ['user_id'] } satisfies UniquePolicyInput;
show('welcome user 42', await queue.add('email.welcome', { user_id: 42, locale: 'en' }, { unique: welcome }));
try {
  await queue.add('email.welcome', { user_id: 42, locale: 'fr' }, { unique: welcome });
} catch (error) {
  if (!isDuplicateJobError(error)) throw error;
  console.log(`${'welcome user 42 again'.padEnd(44)} -> rejected: duplicate of ${error.existingJobId} (${error.existingJobState})`);
}

// ignore: the existing job comes back, flagged, with its own data.
const digest = { keys: ['type', 'args'], args_keys: ['user_id'], on_conflict: 'ignore' } satisfies UniquePolicyInput;
show('digest user 7', await queue.add('email.digest', { user_id: 7, items: [1] }, { unique: digest }));
const again = await queue.add('email.digest', { user_id: 7, items: [1, 2] }, { unique: digest });
show('digest user 7 again', again);
console.log(`${''.padEnd(44)}    the returned job is the existing one: data ${JSON.stringify(again.data)}`);

// replace: the waiting job is cancelled (kept as an OJS "cancelled" record), the new one inserted.
const avatar = { keys: ['type', 'args'], args_keys: ['user_id'], on_conflict: 'replace' } satisfies UniquePolicyInput;
show('resize avatar (old.jpg)', await queue.add('avatar.resize', { user_id: 42, url: 'old.jpg' }, { unique: avatar }));
const replaced = await queue.add('avatar.resize', { user_id: 42, url: 'new.jpg' }, { unique: avatar });
show('resize avatar (new.jpg)', replaced);

// replace_except_schedule: new data, the original run time.
const reminder = { keys: ['type', 'args'], args_keys: ['user_id'], on_conflict: 'replace_except_schedule' } satisfies UniquePolicyInput;
const first = await queue.add('email.reminder', { user_id: 42, text: 'v1' }, { delay: 60_000, unique: reminder });
show('reminder in 60 s', first);
const second = await queue.add('email.reminder', { user_id: 42, text: 'v2' }, { delay: 3_600_000, unique: reminder });
show('reminder in 1 h (keeps the 60 s schedule)', second);
const due = async (id: string) => (await backend.getJob(id))?.scheduled_at;
console.log(`${''.padEnd(44)}    scheduled_at ${await due(first.id!)} -> ${await due(second.id!)}`);

// A period: at most one notification per user per hour, measured on Redis' clock.
const hourly = { keys: ['type', 'args'], args_keys: ['user_id'], period: 'PT1H', on_conflict: 'ignore' } satisfies UniquePolicyInput;
show('notify user 42', await queue.add('push.notify', { user_id: 42 }, { unique: hourly }));
show('notify user 42 again within the hour', await queue.add('push.notify', { user_id: 42 }, { unique: hourly }));

// The replaced job is an OJS cancelled record, invisible to BullMQ's own lists and counts.
const cancelled = await backend.getJob(replaced.unique.replaced!.id);
console.log(
  `cancelled record: ${cancelled?.state}, replaced_by ${cancelled?.replaced_by}; BullMQ getJob: ${await emails.getJob(cancelled!.id)}`,
);
console.log('BullMQ counts:', JSON.stringify(await emails.getJobCounts('wait', 'delayed', 'failed')));

await backend.close();
await emails.obliterate({ force: true });
await removeUniquenessIndex(emails, { global: true });
await emails.close();
await connection.quit();
