/**
 * Which unique adds take the native path (lua/includes/ojs-native-add.lua): the policies
 * BullMQ's own deduplication key answers exactly. That key names one job per id, per queue,
 * and BullMQ deletes it when that job completes, fails for good or is removed; so it answers
 * "is a job of this key live in this queue" and nothing more:
 *
 * - the key has the `queue` dimension (the deduplication key is per queue; a policy without it
 *   looks across queues, through the prefix's index);
 * - the states are the default ones, every live state and no terminal one;
 * - no period (the key has no created_at of its own to measure a window from), no
 *   `x_period_anchor`, `x_update` or `x_successor` (`x_key` only changes how the key is made;
 *   a successor is stored beside the holder the general path reads, docs/design/successor.md);
 * - `reject` or `ignore` (a replace or an update acts on the stored job; the general path does);
 * - a lone add: no parent (flows), no id claimed across queues (the backend's OJS ids), to a
 *   queue whose name is in NFC (its NFD twin shares its index, not its deduplication keys).
 *
 * Anything else takes the general path (the sidecar index), which also sees native jobs; the
 * native path answers only while the key has no index entry. docs/design/bullmq.md, "Two paths".
 */
import { DEFAULT_UNIQUE_STATES, type UniquePolicy } from '../../src/unique-policy.js';

export function nativePathServes(policy: UniquePolicy, lone: boolean): boolean {
  return (
    lone &&
    (policy.on_conflict === 'reject' || policy.on_conflict === 'ignore') &&
    policy.period === null &&
    policy.x_period_anchor === undefined &&
    policy.x_update === undefined &&
    policy.x_successor === undefined &&
    policy.keys.includes('queue') &&
    hasDefaultStates(policy.states)
  );
}

function hasDefaultStates(states: readonly string[]): boolean {
  if (states.length !== DEFAULT_UNIQUE_STATES.length) return false;
  for (const state of DEFAULT_UNIQUE_STATES) if (!states.includes(state)) return false;
  return true;
}
