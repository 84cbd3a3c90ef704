/**
 * `onUniqueAdd`: what a Graphile user sees of every unique add an entry point settled (utils and
 * task helpers `addJob`/`addJobs`, `addJobWithClient`), a deduplicated, replaced or updated add
 * included. Graphile Worker's own `events` emitter reports jobs its worker runs, not adds, and
 * nothing of an add that inserted no row; the adapter does not emit on the user's emitter (it is
 * typed by Graphile, and the library does not patch what it is given), so the hook is an option.
 */
import type { EnqueueResult } from '../../src/unique-jobs-backend.js';

/** One settled unique add: the task identifier, the OJS queue, and the result the add returned. */
export interface UniqueAddEvent {
  identifier: string;
  queue: string;
  result: EnqueueResult;
}

export type UniqueAddHook = (event: UniqueAddEvent) => void;

/** Calls `hook` for each settled add; a hook that throws does not fail the add. */
export function reportUniqueAdds(
  hook: UniqueAddHook | undefined,
  adds: readonly { identifier: string; queue: string; result: EnqueueResult | unknown }[],
): void {
  if (hook === undefined) return;
  for (const add of adds) {
    try {
      hook(add as UniqueAddEvent);
    } catch {
      // The add is done; the hook's failure is the hook's.
    }
  }
}
