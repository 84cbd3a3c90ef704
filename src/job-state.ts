/**
 * The OJS job states (ojs-core §6.1) and the two sets every part of the library reads them by:
 * the live states a job can still leave, and the terminal ones it never leaves.
 */

/** The eight OJS lifecycle states. */
export const OJS_JOB_STATES = ['scheduled', 'available', 'pending', 'active', 'completed', 'retryable', 'cancelled', 'discarded'] as const;

export type OjsJobState = (typeof OJS_JOB_STATES)[number];

/**
 * States a job can still leave, in the order the unique-jobs spec lists them as a policy's
 * default `states` (§6.1): a policy counts exactly these unless it says otherwise.
 */
export const LIVE_STATES: readonly OjsJobState[] = ['available', 'active', 'scheduled', 'retryable', 'pending'];

/** States a job never leaves. */
export const TERMINAL_STATES: readonly OjsJobState[] = ['completed', 'cancelled', 'discarded'];
