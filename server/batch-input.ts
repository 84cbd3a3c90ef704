/**
 * What every store checks of a batch before its first write, so that a batch refused for its
 * input writes nothing on any backend: each job's input and policy (the core's rules), what the
 * backend cannot hold (`pending`), and caller-chosen ids (distinct within the batch, not taken).
 * Issues name the job as the request does: `jobs[2].unique.period`.
 */
import { InvalidJobInputError, underPath, type ValidationIssue } from '../src/errors.js';
import type { UniqueExtension } from '../src/unique-policy.js';
import { prepareUnique } from '../src/unique-enqueue.js';
import type { GatewayJobInput } from './gateway-store.js';

/**
 * Validates one job of a batch, naming its index: nothing of the batch is written when one is bad.
 * `extensions`: the store's `capabilities.unique_jobs.extensions`, which a single PUSH accepts too.
 */
export function validateAt(input: GatewayJobInput, index: number, extensions: readonly UniqueExtension[]): void {
  const { extras: _extras, pending: _pending, ...job } = input;
  try {
    prepareUnique(job, { extensions });
  } catch (error) {
    throw underPath(error, `jobs[${index}].`);
  }
}

export interface BatchChecks {
  /** The policy extensions the store implements (its `capabilities.unique_jobs.extensions`). */
  extensions: readonly UniqueExtension[];
  /** Why this backend refuses `options.pending`, or null when it holds pending jobs. */
  pendingUnsupported: string | null;
  /** Whether a job with this id exists already. */
  isTaken(id: string): Promise<boolean>;
}

/** @throws InvalidJobInputError naming every refused job (a lone taken id is OJS's `duplicate`). */
export async function checkBatch(inputs: readonly GatewayJobInput[], checks: BatchChecks): Promise<void> {
  const issues: ValidationIssue[] = [];
  const ids = new Map<string, number>();
  inputs.forEach((input, index) => {
    validateAt(input, index, checks.extensions);
    if (input.pending && checks.pendingUnsupported)
      issues.push({ path: `jobs[${index}].options.pending`, message: checks.pendingUnsupported });
    if (input.id === undefined) return;
    if (ids.has(input.id)) issues.push({ path: `jobs[${index}].id`, message: `an earlier job of the batch has the id ${input.id}` });
    else ids.set(input.id, index);
  });
  const taken = await Promise.all([...ids].map(async ([id, index]) => ((await checks.isTaken(id)) ? index : -1)));
  for (const index of taken) if (index >= 0) issues.push({ path: `jobs[${index}].id`, message: 'a job with this id already exists' });
  if (issues.length > 0) throw new InvalidJobInputError(issues);
}

/** A backend batch's issues (`[2].unique.period`) named as the request names them (`jobs[2].unique.period`). */
export async function atBatchPaths<T>(batch: Promise<T>): Promise<T> {
  try {
    return await batch;
  } catch (error) {
    if (error instanceof InvalidJobInputError) {
      throw new InvalidJobInputError(error.issues.map((issue) => ({ ...issue, path: issue.path.replace(/^\[/, 'jobs[') })));
    }
    throw error;
  }
}

/** A store error met while writing job `index` of a batch, its issues named as the request names them (`jobs[1].options.pending`). */
export async function atBatchIndex<T>(index: number, write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (error) {
    if (error instanceof InvalidJobInputError) {
      throw new InvalidJobInputError(
        error.issues.map((issue) => (issue.path.startsWith('jobs[') ? issue : { ...issue, path: `jobs[${index}].${issue.path}` })),
        { cause: error },
      );
    }
    throw error;
  }
}
