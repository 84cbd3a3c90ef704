/**
 * The queue pause and resume routes of the OJS HTTP binding (§11.3, §11.4, level 4):
 * `POST /ojs/v1/queues/:name/pause` and `/resume`. The answer carries the public conformance
 * suite's shape (`queue: { name, paused }`) and the binding's fields beside it (`status`,
 * `paused_at` / `resumed_at`, the time of this request): the binding's example gives `queue` as
 * the name alone, which the suite's shape cannot also be.
 *
 * A PUSH to a paused queue is accepted (201) and its job waits, as the suite requires; the
 * binding's 422 `queue_paused` for it is not used (docs/migration.md).
 */
import type { FastifyInstance } from 'fastify';
import type { GatewayStore } from './gateway-store.js';
import { MAX_QUEUE_NAME, QUEUE_PATTERN } from './ojs-request.js';

/** The `:name` a route may name: the PUSH rule for `options.queue` (a bad one is 400 naming `name`). */
export const QUEUE_NAME_PARAMS = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: MAX_QUEUE_NAME, pattern: QUEUE_PATTERN.source } },
} as const;

export function registerQueueControlRoutes(app: FastifyInstance, store: GatewayStore): void {
  for (const [action, paused] of [
    ['pause', true],
    ['resume', false],
  ] as const) {
    app.post<{ Params: { name: string } }>(`/ojs/v1/queues/:name/${action}`, { schema: { params: QUEUE_NAME_PARAMS } }, async (request) => {
      const name = request.params.name;
      await store.setPaused(name, paused);
      const status = paused ? 'paused' : 'active';
      const at = new Date().toISOString();
      return { queue: { name, paused, status }, status, [paused ? 'paused_at' : 'resumed_at']: at };
    });
  }
}
