/**
 * Worker signals (ojs-worker-protocol §2, §4.4, §7.5; ojs-admin-api §9.3): an operator asks a
 * worker to go `quiet` (stop fetching, finish its jobs) or to `terminate` (shut down once its jobs
 * are done), and the worker hears it as the `state` of its next heartbeat's answer.
 *
 * - `POST /ojs/v1/admin/workers/:id/quiet`: the admin API's route.
 * - `POST /ojs/v1/admin/workers/:id/terminate`: the same for `terminate`, which the admin API has
 *   no route for (the gateway's; docs/migration.md).
 *
 * The state is kept on the backend (`GatewayStore.setWorkerState`), so every gateway process over
 * it answers the heartbeat alike, for `WORKER_SIGNAL_RETENTION_MS` (a worker id names one process,
 * and a signalled process goes away). `terminate` is never taken back by a later `quiet`. A worker
 * told to go quiet or terminate that fetches anyway is handed no job.
 *
 * The public conformance suite has no operator step: its files ask for a directive through the
 * job they heartbeat (`options.metadata.test_directive`, or `meta.test_directive`), as the
 * reference server reads it. The gateway honours that only when started for tests (`testReset`):
 * otherwise a producer could stop the workers that run its jobs.
 */
import type { FastifyInstance } from 'fastify';
import type { GatewayJob, GatewayStore, WorkerState } from './gateway-store.js';

/** How long a signal is kept for its worker id. */
export const WORKER_SIGNAL_RETENTION_MS = 24 * 3600 * 1000;
/** The longest worker id taken: it names a record on the backend. */
export const MAX_WORKER_ID_LENGTH = 256;

const WORKER_PARAMS = {
  type: 'object',
  properties: { id: { type: 'string', minLength: 1, maxLength: MAX_WORKER_ID_LENGTH } },
} as const;

export function registerWorkerSignalRoutes(app: FastifyInstance, store: GatewayStore): void {
  for (const state of ['quiet', 'terminate'] as const) {
    app.post<{ Params: { id: string } }>(`/ojs/v1/admin/workers/:id/${state}`, { schema: { params: WORKER_PARAMS } }, async (request) => {
      const id = request.params.id;
      await store.setWorkerState(id, state, WORKER_SIGNAL_RETENTION_MS);
      return { worker_id: id, state: await store.workerState(id), requested_at: new Date().toISOString() };
    });
  }
}

const STATES: ReadonlySet<string> = new Set(['quiet', 'terminate']);

/**
 * The `state` a heartbeat answers: what an operator asked of `workerId`; with `testHooks`, else
 * the suite's directive of a job it beat for (`terminate` before `quiet`).
 */
export async function heartbeatState(
  store: GatewayStore,
  workerId: string | null,
  jobs: readonly GatewayJob[],
  testHooks: boolean,
): Promise<WorkerState> {
  const asked = workerId === null ? 'running' : await store.workerState(workerId);
  if (asked !== 'running' || !testHooks) return asked;
  const directives = jobs.map(testDirective);
  if (directives.includes('terminate')) return 'terminate';
  return directives.includes('quiet') ? 'quiet' : 'running';
}

function testDirective(job: GatewayJob): string | null {
  const metadata = job.envelope.metadata;
  const fromOptions =
    metadata !== null && typeof metadata === 'object' && !Array.isArray(metadata)
      ? (metadata as Record<string, unknown>).test_directive
      : null;
  const directive = fromOptions ?? job.meta.test_directive;
  return typeof directive === 'string' && STATES.has(directive) ? directive : null;
}
