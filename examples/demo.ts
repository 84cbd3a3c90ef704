/**
 * A walk-through of OJS unique jobs on one backend:
 *
 *   npm run demo                                  # the in-memory backend (no services needed)
 *   npm run demo -- --backend bullmq              # Redis from REDIS_URL
 *   npm run demo -- --backend graphile-worker     # PostgreSQL from DATABASE_URL
 *
 * Every section enqueues through the same `UniqueJobsBackend` contract and prints what happened
 * to each job, so the three backends can be compared line by line.
 */
import {
  computeUniquenessKey,
  isDuplicateJobError,
  parseUniquePolicy,
  type EnqueueResult,
  type JobInput,
  type UniquePolicyInput,
} from 'ojs-unique';
import type { DemoBackend } from './demo/demo-backend.js';

/** Each backend's set-up, loaded only when chosen, so the memory demo needs no Redis or PostgreSQL driver. */
const BACKENDS: Record<string, () => Promise<{ default: () => Promise<DemoBackend> }>> = {
  memory: () => import('./demo/memory.js'),
  bullmq: () => import('./demo/bullmq.js'),
  'graphile-worker': () => import('./demo/graphile-worker.js'),
};

async function main(): Promise<void> {
  const flag = process.argv.indexOf('--backend');
  const name = flag >= 0 ? process.argv[flag + 1] : 'memory';
  const load = name !== undefined && Object.hasOwn(BACKENDS, name) ? BACKENDS[name] : undefined;
  if (!load) {
    console.error(`unknown backend ${JSON.stringify(name)}; use one of ${Object.keys(BACKENDS).join(', ')}`);
    process.exitCode = 2;
    return;
  }
  const demo = await (await load()).default();
  try {
    await walkThrough(name!, demo);
  } finally {
    await demo.close();
  }
}

async function walkThrough(name: string, demo: DemoBackend): Promise<void> {
  const { backend } = demo;
  const { strength, mechanism } = backend.capabilities.unique_jobs;
  console.log(`ojs-unique demo on ${name}: ${strength} uniqueness (${mechanism})`);

  const short = (id: string) => id.slice(-8);
  const describe = (job: JobInput) => `${job.type}${job.queue ? `@${job.queue}` : ''} ${JSON.stringify(job.args)}`;
  async function enqueue(job: JobInput): Promise<EnqueueResult | null> {
    const label = describe(job).padEnd(46);
    try {
      const result = await backend.enqueue(job);
      const extra = result.outcome === 'replaced' ? `, cancelled …${short(result.replaced.id)}` : '';
      console.log(`  ${label} -> ${result.outcome.padEnd(12)} …${short(result.job.id)} (${result.job.state}${extra})`);
      return result;
    } catch (error) {
      if (!isDuplicateJobError(error)) throw error;
      const why = error.reason === 'active_not_replaceable' ? 'active, cannot be replaced' : error.existingJobState;
      console.log(`  ${label} -> rejected     duplicate of …${short(error.existingJobId)} (${why})`);
      return null;
    }
  }
  async function wait(ms: number): Promise<void> {
    if (demo.advanceClock) demo.advanceClock(ms);
    else await new Promise((resolve) => setTimeout(resolve, ms));
  }
  const section = (title: string) => console.log(`\n${title}`);

  section('1. on_conflict: "reject" (§5.1), the default: the duplicate is refused with the existing id');
  const reject = { keys: ['type', 'args'], on_conflict: 'reject' } satisfies UniquePolicyInput;
  await enqueue({ type: 'email.send', args: { user_id: 42 }, unique: reject });
  await enqueue({ type: 'email.send', args: { user_id: 42 }, unique: reject });
  await enqueue({ type: 'email.send', args: { user_id: 7 }, unique: reject });

  section('2. on_conflict: "ignore" (§5.4): the caller gets the existing job back, flagged deduplicated');
  const ignore = { keys: ['type', 'args'], on_conflict: 'ignore' } satisfies UniquePolicyInput;
  await enqueue({ type: 'invoice.generate', args: { order_id: 'o-1' }, unique: ignore });
  await enqueue({ type: 'invoice.generate', args: { order_id: 'o-1' }, unique: ignore });

  section('3. on_conflict: "replace" (§5.2): the waiting job is cancelled, the new one takes its place');
  const replace = { keys: ['type', 'args'], args_keys: ['user_id'], on_conflict: 'replace' } satisfies UniquePolicyInput;
  await enqueue({ type: 'resize.avatar', args: { user_id: 42, url: 'old.jpg' }, unique: replace });
  await enqueue({ type: 'resize.avatar', args: { user_id: 42, url: 'new.jpg' }, unique: replace });

  section('4. on_conflict: "replace_except_schedule" (§5.3): new args, original time');
  const keep = { keys: ['type', 'args'], args_keys: ['user_id'], on_conflict: 'replace_except_schedule' } satisfies UniquePolicyInput;
  const at17 = new Date(Date.now() + 5 * 3_600_000);
  const first = await enqueue({ type: 'digest.send', args: { user_id: 42, items: [1] }, scheduled_at: at17, unique: keep });
  const second = await enqueue({
    type: 'digest.send',
    args: { user_id: 42, items: [1, 2] },
    scheduled_at: new Date(at17.getTime() + 3_600_000),
    unique: keep,
  });
  console.log(`  scheduled_at kept: ${first?.job.scheduled_at} -> ${second?.job.scheduled_at}`);

  section('5. args_keys (§3.3): only the named args count; here is the pre-image that is hashed');
  const byUser = { keys: ['type', 'args'], args_keys: ['user_id'] } satisfies UniquePolicyInput;
  const welcome = { type: 'email.welcome', args: { user_id: 42, template: 'welcome', locale: 'en-US' }, unique: byUser };
  console.log(`  pre-image: ${computeUniquenessKey(welcome, parseUniquePolicy(byUser)).canonical}`);
  await enqueue(welcome);
  await enqueue({ type: 'email.welcome', args: { user_id: 42, template: 'reminder', locale: 'fr-FR' }, unique: byUser });

  section("6. A period (§7): the window opens at the first job's created_at and then closes");
  const periodMs = demo.advanceClock ? 3_600_000 : 2_000;
  const windowed = { keys: ['type', 'args'], period: demo.advanceClock ? 'PT1H' : 'PT2S' } satisfies UniquePolicyInput;
  await enqueue({ type: 'notification.push', args: { user_id: 42 }, unique: windowed });
  await enqueue({ type: 'notification.push', args: { user_id: 42 }, unique: windowed });
  console.log(`  … ${demo.advanceClock ? 'the clock moves' : 'waiting'} ${periodMs / 1000} s …`);
  await wait(periodMs + 200);
  await enqueue({ type: 'notification.push', args: { user_id: 42 }, unique: windowed });

  section('7. State filtering (§6): a completed job frees the key, unless "completed" is in states');
  // Jobs that a worker runs get a queue of their own, so the demo's worker takes exactly them.
  const open = { keys: ['type', 'args'] } satisfies UniquePolicyInput;
  const report = await enqueue({ type: 'report.build', queue: 'reports', args: { id: 1 }, unique: open });
  await demo.run(report!.job.id);
  console.log(`  …${short(report!.job.id)} ran and completed`);
  await enqueue({ type: 'report.build', args: { id: 1 }, unique: open });
  const sticky = {
    keys: ['type', 'args'],
    states: ['available', 'active', 'scheduled', 'retryable', 'pending', 'completed'],
  } satisfies UniquePolicyInput;
  const once = await enqueue({ type: 'email.receipt', queue: 'receipts', args: { order: 9 }, unique: sticky });
  await demo.run(once!.job.id);
  console.log(`  …${short(once!.job.id)} ran and completed`);
  await enqueue({ type: 'email.receipt', args: { order: 9 }, unique: sticky });

  section('8. Retry (§9): a failed job waiting to retry still holds the key; discarded releases it');
  const charge = await enqueue({ type: 'charge.card', queue: 'billing', args: { order: 5 }, unique: open, max_attempts: 2 });
  const afterFail = await demo.run(charge!.job.id, 'card declined');
  console.log(`  …${short(charge!.job.id)} failed attempt 1 -> ${afterFail.state}`);
  await enqueue({ type: 'charge.card', args: { order: 5 }, unique: open });
  await demo.makeDue(charge!.job.id);
  const afterSecond = await demo.run(charge!.job.id, 'card declined');
  console.log(`  …${short(charge!.job.id)} failed attempt 2 -> ${afterSecond.state}`);
  await enqueue({ type: 'charge.card', args: { order: 5 }, unique: open });

  section('9. A burst (§8.1): 100 concurrent enqueues of one fingerprint');
  for (const on_conflict of ['reject', 'ignore', 'replace'] as const) {
    const unique = { keys: ['type', 'args'], args_keys: ['user_id'], on_conflict } satisfies UniquePolicyInput;
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, (_, n) => backend.enqueue({ type: `sync.${on_conflict}`, args: { user_id: 1, n }, unique })),
    );
    const count = (pred: (r: PromiseSettledResult<EnqueueResult>) => boolean) => results.filter(pred).length;
    const created = count((r) => r.status === 'fulfilled' && r.value.outcome === 'created');
    const deduplicated = count((r) => r.status === 'fulfilled' && r.value.outcome === 'deduplicated');
    const replaced = count((r) => r.status === 'fulfilled' && r.value.outcome === 'replaced');
    const rejected = count((r) => r.status === 'rejected' && isDuplicateJobError(r.reason));
    const ids = new Set(results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.job.id] : [])));
    const live = (await Promise.all([...ids].map((id) => backend.getJob(id)))).filter((job) => job && job.state !== 'cancelled').length;
    console.log(
      `  ${on_conflict.padEnd(8)} created ${created}, deduplicated ${deduplicated}, replaced ${replaced}, rejected ${rejected}; live jobs now: ${live}`,
    );
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
