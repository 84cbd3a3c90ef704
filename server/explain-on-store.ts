/**
 * `ojs-unique explain` against a live store (cli/cli-explain.ts prints it), here so that cli/
 * reaches the adapters through server/: a backend made for the one call, closed after it. Writes
 * nothing: the Graphile backend runs with `migrate: false`.
 */
import { Redis } from 'ioredis';
import { createBullMQBackend } from '../adapters/bullmq/index.js';
import { createGraphileWorkerBackend } from '../adapters/graphile-worker/index.js';
import type { JobInput } from '../src/job.js';
import type { UniqueExplanation } from '../src/unique-explain.js';

export async function explainOnRedis(job: JobInput, url: string, prefix: string | undefined): Promise<UniqueExplanation> {
  // No retries: an unreachable Redis is an answer, not a wait.
  const connection = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true });
  connection.on('error', () => undefined);
  const backend = createBullMQBackend({ connection, ...(prefix !== undefined ? { prefix } : {}) });
  try {
    await connection.connect();
    return await backend.explainUnique(job);
  } finally {
    await backend.close().catch(() => undefined);
    connection.disconnect();
  }
}

export async function explainOnPostgres(
  job: JobInput,
  connectionString: string,
  values: { 'graphile-schema'?: string; 'unique-schema'?: string },
): Promise<UniqueExplanation> {
  // migrate: false: nothing is created; schemas not installed at this version are an error.
  const backend = createGraphileWorkerBackend({
    connectionString,
    maxPoolSize: 1,
    migrate: false,
    ...(values['graphile-schema'] ? { workerSchema: values['graphile-schema'] } : {}),
    ...(values['unique-schema'] ? { uniqueSchema: values['unique-schema'] } : {}),
  });
  try {
    return await backend.explainUnique(job);
  } finally {
    await backend.close().catch(() => undefined);
  }
}
