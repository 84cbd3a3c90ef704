/**
 * The policy extension the gateway does not serve on any store yet, though the memory backend and
 * the BullMQ and Graphile Worker adapters implement it: `x_successor`. A successor becomes a job
 * later, by the host (BullMQ's finishing script, the Graphile adapter's triggers), without the gateway's record of its PUSH (its envelope, retry
 * policy, schedule), and the gateway's answer does not carry its id. A PUSH asking for it is
 * refused as a store refuses an extension it lacks, naming the field.
 */
import type { GatewayJobInput } from './gateway-store.js';
import { prepareUnique } from '../src/unique-enqueue.js';
import type { UniqueJobsCapabilities } from '../src/unique-jobs-backend.js';

const UNSERVED_EXTENSION = 'x_successor';

/** A backend's capabilities without the extension the gateway does not serve. */
export function gatewayCapabilities(capabilities: UniqueJobsCapabilities): UniqueJobsCapabilities {
  const { unique_jobs } = capabilities;
  return { unique_jobs: { ...unique_jobs, extensions: (unique_jobs.extensions ?? []).filter((name) => name !== UNSERVED_EXTENSION) } };
}

/** Throws the typed input error naming the field when `job` asks for the extension (the backend alone would take it). */
export function refuseUnservedExtension(job: Omit<GatewayJobInput, 'extras'>, capabilities: UniqueJobsCapabilities): void {
  if (job.unique != null && UNSERVED_EXTENSION in job.unique) prepareUnique(job, { extensions: capabilities.unique_jobs.extensions ?? [] });
}
