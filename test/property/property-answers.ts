/**
 * What the property tests compare: a call's answer in terms every target shares (outcome, the
 * duplicate error's existing job, the input error's fields, any other error's name), and a call
 * settled with a time limit, so a hang is an answer too.
 */
import { isDuplicateJobError, isInvalidJobInputError, type EnqueueResult, type OjsJob } from '../../src/index.js';

/** What one call answered, in terms every target shares. */
export type Answer =
  /** `successor`: x_successor's pending successor, when the answer names one. */
  | { kind: 'created' | 'deduplicated' | 'replaced' | 'updated'; job: OjsJob; replaced: OjsJob[]; successor?: string }
  | { kind: 'duplicate'; existingJobId: string; existingJobState: string }
  | { kind: 'invalid'; paths: string[] }
  | { kind: 'cancelled'; job: OjsJob }
  | { kind: 'error'; name: string; code: string | undefined; message: string };

export function answerOf(
  settled: { ok: true; value: EnqueueResult } | { ok: false; error: unknown },
  mapPath: (path: string) => string,
): Answer {
  if (settled.ok) {
    const { value } = settled;
    const replaced = value.outcome === 'replaced' ? [value.replaced, ...(value.also_replaced ?? [])] : [];
    if (value.outcome === 'deduplicated' && value.successor !== undefined)
      return { kind: value.outcome, job: value.job, replaced, successor: value.successor.id };
    return { kind: value.outcome, job: value.job, replaced };
  }
  const { error } = settled;
  if (isDuplicateJobError(error))
    return { kind: 'duplicate', existingJobId: error.existingJobId, existingJobState: error.existingJobState };
  if (isInvalidJobInputError(error) && error.code === 'invalid_request') {
    return { kind: 'invalid', paths: [...new Set(error.issues.map((issue) => mapPath(issue.path)))].sort() };
  }
  const e = error as { name?: string; code?: string; message?: string };
  return { kind: 'error', name: e?.name ?? typeof error, code: e?.code, message: String(e?.message ?? error).slice(0, 160) };
}

export function summary(answer: Answer): string {
  switch (answer.kind) {
    case 'invalid':
      return `invalid_request [${answer.paths.length > 4 ? `${answer.paths.slice(0, 3).join(', ')} … ${answer.paths.length} fields` : answer.paths.join(', ')}]`;
    case 'duplicate':
      return `duplicate (${answer.existingJobState})`;
    case 'error':
      return `${answer.name}${answer.code ? ` (${answer.code})` : ''}`;
    default:
      return answer.kind;
  }
}

export async function settle<T>(call: () => Promise<T>, ms = 20_000): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const value = await Promise.race([
      call(),
      new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${ms} ms`), { name: 'Hang' })), ms)),
      ),
    ]);
    return { ok: true, value };
  } catch (error) {
    return { ok: false, error };
  } finally {
    clearTimeout(timer);
  }
}
