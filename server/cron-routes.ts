/**
 * The cron routes of the OJS HTTP binding (§13, level 2) and the OJS cron spec (ojs-cron §8):
 * `POST /ojs/v1/cron` (register, or replace the cron of that name: 201 new, 200 replaced),
 * `GET /ojs/v1/cron` (list), `GET /ojs/v1/cron/:name`, `DELETE /ojs/v1/cron/:name` (404 when
 * there is none). The registration is read in both forms clients send (cron-definition.ts); each
 * answer carries the public conformance suite's shape (`cron`, `crons`: `expression`,
 * `job_template`) and the binding's beside it (`cron_job`, `cron_jobs`: `cron`, `type`, `args`,
 * `options`; `deleted`, `name`), as the queue routes carry both (queue-control-routes.ts).
 *
 * The binding's §13.2 answers a registered name 409; ojs-cron §8.1 (CRON-26) requires an upsert,
 * which lets every process of an application register its crons at start-up: the upsert is what
 * this gateway does (docs/migration.md).
 */
import type { FastifyInstance } from 'fastify';
import { InvalidJobInputError } from '../src/errors.js';
import type { JsonValue } from '../src/job.js';
import { isPlainObject } from '../src/json-rules.js';
import { readCronRegistration } from './cron-definition.js';
import type { CronRecord } from './cron-schedules.js';
import type { GatewayStore } from './gateway-store.js';

/** A cron name that is not registered: 404 `not_found` (the server's error handler). */
export class CronNotFoundError extends Error {
  readonly code = 'not_found' as const;
  constructor(readonly cronName: string) {
    super(`cron ${cronName} not found`);
    this.name = 'CronNotFoundError';
  }
}

const CRON_NAME_PARAMS = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 255, pattern: '^[a-z0-9][a-z0-9\\-.]*$' } },
} as const;

/** A cron as the wire shows it: the suite's fields and the binding's. */
export function wireCron(record: CronRecord): Record<string, JsonValue> {
  const { template } = record;
  const job: Record<string, JsonValue> = { type: template.type, args: template.args, options: template.options ?? {} };
  if (template.meta !== undefined) job.meta = template.meta;
  return {
    name: record.name,
    expression: record.expression,
    cron: record.expression,
    timezone: record.timezone,
    ...job,
    job_template: job,
    overlap_policy: record.overlap_policy,
    enabled: record.enabled,
    status: record.enabled ? 'active' : 'paused',
    description: record.description,
    last_run_at: record.last_run_at,
    next_run_at: record.next_run_at,
    run_count: record.run_count,
    created_at: record.created_at,
  };
}

const answer = (record: CronRecord) => {
  const cron = wireCron(record);
  return { cron, cron_job: cron };
};

export function registerCronRoutes(app: FastifyInstance, store: GatewayStore): void {
  app.post('/ojs/v1/cron', async (request, reply) => {
    if (!isPlainObject(request.body))
      throw new InvalidJobInputError([{ path: 'body', message: 'must be a JSON object: the cron to register' }]);
    const definition = readCronRegistration(request.body);
    const { record, created } = await store.cron.register(definition);
    void reply.status(created ? 201 : 200);
    return answer(record);
  });

  app.get<{ Querystring: { enabled?: string } }>('/ojs/v1/cron', async (request) => {
    const enabled = request.query.enabled;
    const records = (await store.cron.list()).filter((record) => enabled === undefined || String(record.enabled) === enabled);
    const crons = records.map(wireCron);
    return {
      crons,
      cron_jobs: crons,
      count: crons.length,
      pagination: { total: crons.length, limit: crons.length, offset: 0, has_more: false },
    };
  });

  app.get<{ Params: { name: string } }>('/ojs/v1/cron/:name', { schema: { params: CRON_NAME_PARAMS } }, async (request) => {
    const record = await store.cron.get(request.params.name);
    if (!record) throw new CronNotFoundError(request.params.name);
    return answer(record);
  });

  app.delete<{ Params: { name: string } }>('/ojs/v1/cron/:name', { schema: { params: CRON_NAME_PARAMS } }, async (request) => {
    const record = await store.cron.remove(request.params.name);
    if (!record) throw new CronNotFoundError(request.params.name);
    return { ...answer(record), deleted: true, name: record.name };
  });
}
