/**
 * Runs every row of docs/expressiveness.md (expressiveness-rows.ts) through a conformance
 * subject: the row's translator output as the jobs' policy, its scenario step by step, each
 * enqueue's outcome checked. One suite, run on every backend.
 *
 * A row whose policy uses an extension the backend does not declare
 * (`capabilities.unique_jobs.extensions`) is pending there, titled with the missing extension;
 * before it is skipped, the test proves the backend refuses that policy with
 * `InvalidJobInputError` naming the extension's field and writes nothing, rather than
 * enqueueing as if the field were absent.
 */
import { expect } from 'chai';
import {
  isDuplicateJobError,
  isInvalidJobInputError,
  parseUniquePolicy,
  type EnqueueResult,
  type JobInput,
  type OjsJob,
  type UniqueExtension,
  type UniquePolicyInput,
} from '../../src/index.js';
import { policyExtensions } from '../../src/internal.js';
import type { ConformanceSubject, MakeConformanceSubject, RunningAttempt } from '../conformance/conformance-subject.js';
import { ROWS, type EnqueueStep, type ExpressivenessRow } from './expressiveness-rows.js';

export function describeExpressiveness(name: string, makeSubject: MakeConformanceSubject): void {
  describe(`docs/expressiveness.md rows: ${name}`, function () {
    this.timeout(30_000);
    let subject: ConformanceSubject | undefined;

    beforeEach(async function () {
      subject = await makeSubject({ title: this.currentTest!.fullTitle() });
    });

    afterEach(async function () {
      const current = subject;
      subject = undefined;
      const state = this.currentTest?.state;
      await current?.close({ passed: state === 'passed' || state === 'pending' });
    });

    for (const row of ROWS) {
      it(`${row.system} ${row.option}: ${row.shows}`, async function () {
        expect(row.translate(), row.call).to.deep.equal(row.becomes);
        const missing = missingExtensions(subject!, row);
        if (missing.length > 0) {
          await expectRefused(subject!, row, missing);
          this.test!.title += ` [pending on ${name}: needs ${missing.join(' and ')}, an extension it does not declare yet]`;
          this.skip();
        }
        await runScenario(subject!, row);
      });
    }
  });
}

function policiesOf(row: ExpressivenessRow): UniquePolicyInput[] {
  const policies = [
    row.becomes,
    ...row.scenario.flatMap((step) => ('enqueue' in step && step.enqueue.policy ? [step.enqueue.policy] : [])),
  ];
  return policies.filter((policy): policy is UniquePolicyInput => policy !== null);
}

function missingExtensions(subject: ConformanceSubject, row: ExpressivenessRow): UniqueExtension[] {
  const supported = subject.backend.capabilities.unique_jobs.extensions ?? [];
  const used = new Set(policiesOf(row).flatMap((policy) => policyExtensions(parseUniquePolicy(policy))));
  return [...used].filter((extension) => !supported.includes(extension));
}

/** The row's first job, under a caller-chosen id: refused, naming each missing extension, and not written. */
async function expectRefused(subject: ConformanceSubject, row: ExpressivenessRow, missing: readonly UniqueExtension[]): Promise<void> {
  const id = `refused-${Math.random().toString(36).slice(2)}`;
  const first = row.scenario.find((step) => 'enqueue' in step) as { enqueue: EnqueueStep };
  const job = { ...jobOf(subject, row, first.enqueue), id };
  let error: unknown;
  try {
    await subject.backend.enqueue(job);
  } catch (caught) {
    error = caught;
  }
  expect(isInvalidJobInputError(error), `expected InvalidJobInputError, got ${String(error)}`).to.equal(true);
  const paths = (error as { issues: { path: string }[] }).issues.map((issue) => issue.path);
  for (const extension of missing) expect(paths).to.include(`unique.${extension}`);
  expect(await subject.backend.getJob(id)).to.equal(null);
}

function jobOf(subject: ConformanceSubject, row: ExpressivenessRow, step: EnqueueStep): JobInput {
  const policy = step.policy !== undefined ? step.policy : row.becomes;
  const job: JobInput = { type: 'row.job', args: {}, ...step.job };
  if (policy !== null) job.unique = policy;
  if (step.scheduledIn !== undefined) job.scheduled_at = new Date((subject.clock?.now() ?? Date.now()) + step.scheduledIn);
  return job;
}

async function runScenario(subject: ConformanceSubject, row: ExpressivenessRow): Promise<void> {
  const named = new Map<string, OjsJob>();
  /** x_successor: pending successors' ids, by name (a `job` step names the job it finds). */
  const successors = new Map<string, string>();
  const running = new Map<string, RunningAttempt>();
  const idOf = (alias: string): string => {
    const id = named.get(alias)?.id ?? successors.get(alias);
    if (id === undefined) throw new Error(`row scenario: no job named ${alias}`);
    return id;
  };
  try {
    for (const [index, step] of row.scenario.entries()) {
      const at = `step ${index + 1}`;
      if ('enqueue' in step) {
        await enqueueStep(subject, row, step.enqueue, named, successors, at);
      } else if ('start' in step) {
        running.set(step.start, await subject.start(idOf(step.start)));
      } else if ('finish' in step) {
        const attempt = running.get(step.finish)!;
        running.delete(step.finish);
        await (step.outcome === 'complete' ? attempt.complete() : attempt.fail('expressiveness: planned failure'));
      } else if ('run' in step) {
        const attempt = await subject.start(idOf(step.run));
        await (step.outcome === 'complete' ? attempt.complete() : attempt.fail('expressiveness: planned failure'));
      } else if ('job' in step) {
        const job = await subject.backend.getJob(idOf(step.job));
        if (step.has === null) {
          expect(job, `${at}: job ${step.job}`).to.equal(null);
        } else {
          expect(job, `${at}: job ${step.job}`).to.not.equal(null);
          for (const [field, value] of Object.entries(step.has)) {
            expect(job![field as keyof OjsJob], `${at}: ${step.job}.${field}`).to.deep.equal(value);
          }
          named.set(step.job, job!);
        }
      } else if ('makeDue' in step) {
        await subject.makeDue(idOf(step.makeDue));
      } else if (subject.clock) {
        subject.clock.advance(step.elapse);
      } else {
        await new Promise((resolve) => setTimeout(resolve, step.elapse));
      }
    }
  } finally {
    // A scenario that failed half-way leaves no worker running into the next test.
    for (const attempt of running.values()) await attempt.complete().catch(() => undefined);
  }
}

async function enqueueStep(
  subject: ConformanceSubject,
  row: ExpressivenessRow,
  step: EnqueueStep,
  named: Map<string, OjsJob>,
  successors: Map<string, string>,
  at: string,
): Promise<void> {
  const existing = step.existing === undefined ? undefined : named.get(step.existing)!.id;
  let result: EnqueueResult | undefined;
  let error: unknown;
  try {
    result = await subject.backend.enqueue(jobOf(subject, row, step));
  } catch (caught) {
    error = caught;
  }
  if (step.expect === 'rejected') {
    expect(isDuplicateJobError(error), `${at}: expected DuplicateJobError, got ${error ? String(error) : JSON.stringify(result)}`).to.equal(
      true,
    );
    if (existing !== undefined) expect((error as { existingJobId: string }).existingJobId, `${at}: existing job`).to.equal(existing);
    return;
  }
  if (error !== undefined) throw error;
  expect(result!.outcome, `${at}: outcome`).to.equal(step.expect);
  if (existing !== undefined) expect(result!.job.id, `${at}: the existing job`).to.equal(existing);
  if (step.expect === 'created' && existing === undefined) {
    for (const job of named.values()) expect(result!.job.id, `${at}: a new job`).to.not.equal(job.id);
  }
  if (step.changed !== undefined && result!.outcome === 'updated') expect(result!.changed, `${at}: changed`).to.deep.equal(step.changed);
  if (step.scheduled_after_created !== undefined) {
    const job = result!.job;
    expect(Date.parse(job.scheduled_at) - Date.parse(job.created_at), `${at}: scheduled_at - created_at`).to.equal(
      step.scheduled_after_created,
    );
  }
  for (const [field, value] of Object.entries(step.job_has ?? {})) {
    expect(result!.job[field as keyof OjsJob], `${at}: job.${field}`).to.deep.equal(value);
  }
  const successor = result!.outcome === 'deduplicated' ? result!.successor : undefined;
  expect(successor !== undefined, `${at}: a pending successor`).to.equal(step.successor !== undefined);
  if (step.successor !== undefined) {
    for (const id of [...[...named.values()].map((job) => job.id), ...successors.values()]) {
      expect(successor!.id, `${at}: the successor's own id`).to.not.equal(id);
    }
    successors.set(step.successor, successor!.id);
  }
  if (step.as !== undefined) named.set(step.as, result!.job);
}
