/**
 * Report-only policies (`x_report_only`) on the memory backend: `enqueue` and `enqueueMany`
 * always insert, answer `wouldBe`, hold no enforced key, and count as what they would have done.
 */
import { expect } from 'chai';
import { createMemoryBackend } from '../../adapters/memory/index.js';
import type { EnqueueResult } from '../../src/index.js';
import { useTelemetryCapture } from '../telemetry/telemetry-capture.js';
import { expectReportOnlyScenario, type ReportOnlyAdd } from '../report-only-scenario.js';

const normalised = (result: EnqueueResult): ReportOnlyAdd => ({ ...result, id: result.job.id });

describe('memory backend: report-only policies', function () {
  const capture = useTelemetryCapture();
  const queue = 'reports';

  it('enqueue: always inserts, says what the policy would have done, and enforcing later is clean', async () => {
    const backend = createMemoryBackend({ countDuplicates: true });
    await expectReportOnlyScenario((type, args, unique) => backend.enqueue({ type, args, queue, unique }).then(normalised), {
      type: 'report.build',
      queue,
      system: 'memory',
      capture,
      jobs: async () => backend.jobs().filter((job) => job.type === 'report.build').length,
      duplicateCount: async (id) => (await backend.getJob(id))?.duplicate_count,
    });
  });

  it('enqueueMany: the same, entry by entry', async () => {
    const backend = createMemoryBackend({ countDuplicates: true });
    await expectReportOnlyScenario(
      (type, args, unique) => backend.enqueueMany([{ type, args, queue, unique }]).then(([result]) => normalised(result!)),
      {
        type: 'report.build',
        queue,
        system: 'memory',
        capture,
        jobs: async () => backend.jobs().filter((job) => job.type === 'report.build').length,
        duplicateCount: async (id) => (await backend.getJob(id))?.duplicate_count,
      },
    );
  });

  it('reports replaced and updated without cancelling or updating anything', async () => {
    const backend = createMemoryBackend({ countDuplicates: true });
    const policy = { keys: ['type'], on_conflict: 'replace', x_update: { scheduled: ['args'] }, x_report_only: true } as const;
    const first = await backend.enqueue({ type: 't', args: { n: 1 }, unique: policy });
    const replacing = await backend.enqueue({ type: 't', args: { n: 2 }, unique: policy });
    expect(replacing).to.include({ outcome: 'created', wouldBe: 'replaced', existingJobId: first.job.id });
    const later = new Date(Date.now() + 60_000).toISOString();
    const scheduled = await backend.enqueue({
      type: 'u',
      args: { n: 1 },
      scheduled_at: later,
      unique: { ...policy, states: ['scheduled'] },
    });
    const updating = await backend.enqueue({
      type: 'u',
      args: { n: 2 },
      scheduled_at: later,
      unique: { ...policy, states: ['scheduled'] },
    });
    expect(updating).to.include({ outcome: 'created', wouldBe: 'updated', existingJobId: scheduled.job.id });
    expect((await backend.getJob(first.job.id))!.state).to.equal('available');
    expect((await backend.getJob(scheduled.job.id))!.args).to.deep.equal({ n: 1 });
  });

  it('refuses a report-only mark that is not a boolean, naming it', async () => {
    const backend = createMemoryBackend({ countDuplicates: true });
    const error = await backend
      .enqueue({ type: 't', args: {}, unique: { x_report_only: 'yes' as never } })
      .catch((caught: unknown) => caught);
    expect((error as { issues: { path: string }[] }).issues.map((issue) => issue.path)).to.deep.equal(['unique.x_report_only']);
  });
});
