/**
 * The dead letter routes of the OJS HTTP binding (§12, level 1): `GET /ojs/v1/dead-letter`
 * (`queue`, `limit` 1..100 default 50, `offset`), `POST /ojs/v1/dead-letter/:id/retry` and
 * `DELETE /ojs/v1/dead-letter/:id`. The dead letters are the discarded jobs, kept by each host
 * where it keeps its failed jobs (`GatewayStore.deadLetters`), so every gateway process over the
 * backend, and one started later, lists the same. A job that is not a dead letter (another
 * state, or none) is 404 `not_found` on retry and delete.
 */
import type { FastifyInstance } from 'fastify';
import { InvalidJobInputError } from '../src/errors.js';
import type { GatewayJob, GatewayStore } from './gateway-store.js';
import { QUEUE_NAME_PARAMS } from './queue-control-routes.js';

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 100;

const LIST_QUERY = {
  type: 'object',
  properties: {
    queue: QUEUE_NAME_PARAMS.properties.name,
    limit: { type: 'string', pattern: '^[0-9]{1,9}$' },
    offset: { type: 'string', pattern: '^[0-9]{1,9}$' },
  },
} as const;

/** `view`: the job as the wire shows it (ojs-server.ts's `wireJob`). */
export function registerDeadLetterRoutes(
  app: FastifyInstance,
  store: GatewayStore,
  view: (job: GatewayJob) => Record<string, unknown>,
): void {
  app.get<{ Querystring: { queue?: string; limit?: string; offset?: string } }>(
    '/ojs/v1/dead-letter',
    { schema: { querystring: LIST_QUERY } },
    async (request) => {
      const limit = request.query.limit === undefined ? DEFAULT_LIMIT : Number(request.query.limit);
      if (limit < 1 || limit > MAX_LIMIT)
        throw new InvalidJobInputError([{ path: 'limit', message: `must be an integer from 1 to ${MAX_LIMIT}` }]);
      const offset = request.query.offset === undefined ? 0 : Number(request.query.offset);
      const query = { limit, offset, ...(request.query.queue === undefined ? {} : { queue: request.query.queue }) };
      const page = await store.deadLetters.list(query);
      return {
        jobs: page.jobs.map(view),
        pagination: { total: page.total, limit, offset, has_more: offset + page.jobs.length < page.total },
      };
    },
  );

  app.post<{ Params: { id: string } }>('/ojs/v1/dead-letter/:id/retry', async (request) => {
    const job = await store.deadLetters.retry(request.params.id);
    return { job: { ...view(job), re_enqueued_at: new Date().toISOString() } };
  });

  app.delete<{ Params: { id: string } }>('/ojs/v1/dead-letter/:id', async (request) => {
    await store.deadLetters.remove(request.params.id);
    return { deleted: true, job_id: request.params.id };
  });
}
