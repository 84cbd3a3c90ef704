/**
 * What every section of the conformance suite shares: the current test's subject, and the few
 * steps the sections compose (run a job to an outcome, let time pass, catch a rejection).
 */
import { expect } from 'chai';
import type { EnqueueResult, JobInput, OjsJob } from '../../src/index.js';
import type { ConformanceSubject, InexpressibleFeature } from './conformance-subject.js';

export interface SuiteContext {
  /** The subject of the running test (fresh per test). */
  readonly subject: ConformanceSubject;
}

export function enqueue(ctx: SuiteContext, job: JobInput): Promise<EnqueueResult> {
  return ctx.subject.backend.enqueue(job);
}

/** Enqueues and asserts the job was created. */
export async function created(ctx: SuiteContext, job: JobInput): Promise<OjsJob> {
  const result = await enqueue(ctx, job);
  expect(result.outcome, 'outcome').to.equal('created');
  return result.job;
}

/** The rejection of `promise`, failing the test if it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<Error & Record<string, unknown>> {
  try {
    const value = await promise;
    expect.fail(`expected a rejection, got ${JSON.stringify(value)}`);
  } catch (error) {
    if (error instanceof Error && error.name === 'AssertionError') throw error;
    return error as Error & Record<string, unknown>;
  }
}

/** Runs one attempt of `id` with a real worker to the given outcome. */
export async function run(ctx: SuiteContext, id: string, outcome: 'complete' | 'fail'): Promise<OjsJob> {
  const attempt = await ctx.subject.start(id);
  return outcome === 'complete' ? attempt.complete() : attempt.fail('conformance: planned failure');
}

/** Lets `ms` pass: moves the virtual clock, or waits on a real one. */
export async function elapse(ctx: SuiteContext, ms: number): Promise<void> {
  if (ctx.subject.clock) ctx.subject.clock.advance(ms);
  else await new Promise((resolve) => setTimeout(resolve, ms));
}

export async function stateOf(ctx: SuiteContext, id: string): Promise<string | undefined> {
  return (await ctx.subject.backend.getJob(id))?.state;
}

/** A `mocha` test that needs the virtual clock: on a real clock it is skipped with the reason. */
export function needsVirtualClock(ctx: SuiteContext, test: Mocha.Context, why: string): void {
  if (!ctx.subject.clock) {
    test.test!.title += ` [skipped on a real clock: ${why}]`;
    test.skip();
  }
}

/** A `mocha` test that needs `feature`: skipped, with the reason, where the subject cannot express it. */
export function needsExpressible(ctx: SuiteContext, test: Mocha.Context, feature: InexpressibleFeature): void {
  const reason = ctx.subject.inexpressible?.[feature];
  if (reason !== undefined) {
    test.test!.title += ` [skipped on this entry point: ${reason}]`;
    test.skip();
  }
}

/** A short period, and the check that the steps meant to fall inside it did. */
export interface ShortPeriod {
  readonly iso: string;
  readonly ms: number;
  /**
   * Wraps a step that must land inside the window; settles as the step did. On a real clock, a
   * machine too slow for the step to land inside makes the test inconclusive (skipped, saying
   * so) instead of failing on the clock.
   */
  inWindow<T>(step: Promise<T>): Promise<T>;
}

/**
 * Runs a scenario that must see a window close. On a virtual clock any period works; on a real one
 * the window must be short enough to wait out, and a loaded machine may take longer than that
 * between two steps. The check is sound because the first job's `created_at` is no earlier than
 * the scenario's start: a step that settled less than one period after the start ran inside the
 * window. (Running again with a longer period would not do: the slow try's jobs stay in the
 * subject's queue, where the next try's worker would take them.)
 */
export async function withShortPeriod(
  ctx: SuiteContext,
  test: Mocha.Context,
  scenario: (period: ShortPeriod) => Promise<void>,
): Promise<void> {
  if (ctx.subject.clock) return scenario({ iso: 'PT1H', ms: 3_600_000, inWindow: (step) => step });
  const ms = 2_000;
  const started = Date.now();
  const inWindow = async <T>(step: Promise<T>): Promise<T> => {
    const settled = await step.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    const took = Date.now() - started;
    if (took >= ms) {
      test.test!.title += ` [inconclusive: the machine took ${took} ms for steps meant to fit in a ${ms} ms period]`;
      test.skip();
    }
    if ('error' in settled) throw settled.error;
    return settled.value;
  };
  return scenario({ iso: 'PT2S', ms, inWindow });
}
