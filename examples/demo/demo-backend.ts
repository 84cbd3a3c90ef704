/**
 * What examples/demo.ts needs from each backend: the backend itself, plus a worker that runs a
 * job once, so the demo can show what completion and retries do to a job's key. Each file in
 * this folder builds one from the public API of `ojs-unique` and the host.
 */
import type { OjsJob, UniqueJobsBackend } from 'ojs-unique';

export interface DemoBackend {
  backend: UniqueJobsBackend;
  /** Moves the backend's clock, when it takes one (memory); null on a server's clock, where the demo waits instead. */
  advanceClock: ((ms: number) => void) | null;
  /**
   * Runs one attempt of job `id`, which the demo makes sure is the only due job of its type and
   * queue: the handler succeeds, or throws `failWith`. Resolves with the job once the backend
   * shows the attempt's outcome (`completed`, `retryable` or `discarded`).
   */
  run(id: string, failWith?: string): Promise<OjsJob>;
  /** Makes a retryable job due now, as if its backoff had passed. */
  makeDue(id: string): Promise<void>;
  /** Closes everything it opened and deletes the demo's data. */
  close(): Promise<void>;
}
