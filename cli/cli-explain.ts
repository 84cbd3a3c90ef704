/**
 * `ojs-unique explain`: what an add of a job would do now on a live store, and why, writing
 * nothing: the key and pre-image, every job recorded under the key (state, window end, counted or
 * not) and the outcome. The answer is the backends' `explainUnique` (src/unique-explain.ts).
 *
 *   ojs-unique explain <job.json|-> --redis-url <url> [--prefix <p>] [--json]
 *   ojs-unique explain <job.json|-> --database-url <url> [--graphile-schema <s>] [--unique-schema <s>] [--json]
 *
 * The key and the job ids are printed because the user asked, on their own terminal (§12 keeps
 * them out of logs and errors; nothing here logs). Exit codes: 0 explained, 1 invalid job or the
 * store refused, 2 bad usage or an unreadable file.
 */
import { parseArgs } from 'node:util';
import { isInvalidJobInputError, type JobInput, type UniqueExplanation } from '../src/index.js';
import { asJob, readJson } from './cli-main.js';

export const EXPLAIN_USAGE = `usage:
  ojs-unique explain <job.json|-> --redis-url <url> [--prefix <BullMQ key prefix>] [--json]
  ojs-unique explain <job.json|-> --database-url <url> [--graphile-schema <s>] [--unique-schema <s>] [--json]`;

export async function explain(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(EXPLAIN_USAGE);
    return 0;
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        'redis-url': { type: 'string' },
        prefix: { type: 'string' },
        'database-url': { type: 'string' },
        'graphile-schema': { type: 'string' },
        'unique-schema': { type: 'string' },
        json: { type: 'boolean', default: false },
      },
      strict: true,
    });
  } catch (error) {
    console.error(`ojs-unique explain: ${(error as Error).message}\n${EXPLAIN_USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const usage = (message: string) => {
    console.error(`ojs-unique explain: ${message}\n${EXPLAIN_USAGE}`);
    return 2;
  };
  if (positionals.length !== 1) return usage(positionals.length === 0 ? 'no file given' : `one file at a time (got ${positionals.length})`);
  const redisUrl = values['redis-url'];
  const databaseUrl = values['database-url'];
  if ((redisUrl === undefined) === (databaseUrl === undefined))
    return usage('give the store: --redis-url (BullMQ) or --database-url (Graphile Worker)');
  if (redisUrl !== undefined && (values['graphile-schema'] || values['unique-schema']))
    return usage('--graphile-schema and --unique-schema are for --database-url');
  if (databaseUrl !== undefined && values.prefix !== undefined) return usage('--prefix is for --redis-url');
  let job: JobInput | null;
  try {
    job = asJob(readJson(positionals[0]!));
  } catch (error) {
    console.error(`ojs-unique explain: ${(error as Error).message}`);
    return 2;
  }
  if (!job) {
    console.error('ojs-unique explain: the file is not a job (it has no "type")');
    return 2;
  }
  const { explainOnRedis, explainOnPostgres } = await import('../server/explain-on-store.js');
  let explanation: UniqueExplanation;
  try {
    explanation =
      redisUrl !== undefined ? await explainOnRedis(job, redisUrl, values.prefix) : await explainOnPostgres(job, databaseUrl!, values);
  } catch (error) {
    if (isInvalidJobInputError(error)) {
      for (const issue of error.issues) console.error(`${issue.path}: ${issue.message}`);
      return 1;
    }
    console.error(`ojs-unique explain: ${(error as Error).message}`);
    return 1;
  }
  console.log(values.json ? JSON.stringify(explanation) : formatExplanation(explanation));
  return 0;
}

/** The explanation for a person: one line per fact, one per job. */
export function formatExplanation(e: UniqueExplanation): string {
  const lines = [`key:       ${e.uniqueness_key}`, `pre-image: ${e.canonical}`, `now:       ${e.now}`];
  lines.push(`jobs under the key: ${e.jobs.length === 0 ? 'none' : e.jobs.length}`);
  for (const job of e.jobs) {
    const window = e.policy.period === null ? 'no period' : job.window_end === null ? 'window never ends' : `window ends ${job.window_end}`;
    const counted = job.counted ? 'counted' : `not counted (${NOT_COUNTED[job.not_counted!]})`;
    lines.push(
      `  ${job.id}${job.queue !== undefined ? ` (queue ${job.queue})` : ''}: ${job.state}, created ${job.created_at}, ${window}, ${counted}`,
    );
  }
  lines.push(`outcome:   ${e.outcome}${outcomeDetail(e)}`);
  return lines.join('\n');
}

const NOT_COUNTED = {
  state: 'its state is not in the policy’s states',
  window_closed: 'its window has closed',
  superseded: 'a replace took the key from it',
} as const;

function outcomeDetail(e: UniqueExplanation): string {
  switch (e.outcome) {
    case 'created':
      return ' (no job counts as a duplicate: an add inserts)';
    case 'deduplicated':
      return ` (an add inserts nothing and returns job ${e.existing_job_id})`;
    case 'rejected':
      return e.reason === 'active_not_replaceable'
        ? ` (job ${e.existing_job_id} is active and this backend cannot replace an active job)`
        : ` (an add fails with a duplicate error naming job ${e.existing_job_id})`;
    case 'replaced':
      return ` (an add inserts and takes the key from ${e.replaces!.map((id) => `job ${id}`).join(', ')})`;
    case 'updated':
      return ` (an add updates job ${e.existing_job_id} in place: ${e.update_fields!.join(', ')})`;
  }
}
