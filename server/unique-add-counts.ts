/**
 * The gateway's own count of unique PUSHes per queue and outcome, for `GET
 * /ojs/v1/queues/:name/stats` (`unique_adds`): the same counts as the `ojs.unique.adds` metric
 * (telemetry/) records for the adds this gateway made, per `messaging.destination.name`.
 *
 * Process-local, in memory: since this gateway process started (or its test reset), of the PUSHes
 * it served, one per job that carried a policy, under the queue the PUSH named. Not stored in
 * the backend, which would cost every add a write; gateways sharing a backend each count their
 * own (the metric, summed by the collector, is the fleet's view).
 */
import { UNIQUE_ADD_OUTCOMES, type UniqueAddOutcome } from '../src/unique-add-telemetry.js';

export type UniqueAddTally = Record<UniqueAddOutcome, number>;

export class UniqueAddCounts {
  readonly #byQueue = new Map<string, UniqueAddTally>();

  add(queue: string, outcome: UniqueAddOutcome): void {
    let tally = this.#byQueue.get(queue);
    if (!tally) {
      tally = zero();
      this.#byQueue.set(queue, tally);
    }
    tally[outcome] += 1;
  }

  /** The counts of `queue` (zeros for a queue with none). */
  of(queue: string): UniqueAddTally {
    return { ...(this.#byQueue.get(queue) ?? zero()) };
  }

  clear(): void {
    this.#byQueue.clear();
  }
}

function zero(): UniqueAddTally {
  return Object.fromEntries(UNIQUE_ADD_OUTCOMES.map((outcome) => [outcome, 0])) as UniqueAddTally;
}
