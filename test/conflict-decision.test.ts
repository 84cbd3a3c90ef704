import { expect } from 'chai';
import { parseUniquePolicy, type OjsJobState } from '../src/index.js';
import { decideConflict, decideUniqueConflict, isDuplicate, type ConflictCandidate } from '../src/internal.js';

const NOW = Date.parse('2026-02-12T12:00:00.000Z');
const HOUR = 3_600_000;
const candidate = (id: string, state: OjsJobState, ageMs = 0, scheduledInMs?: number): ConflictCandidate => ({
  id,
  state,
  created_at: NOW - ageMs,
  scheduled_at: scheduledInMs === undefined ? NOW - ageMs : NOW + scheduledInMs,
});
const decide = (policy: unknown, candidates: ConflictCandidate[], canReplaceActive = false) =>
  decideConflict({ policy: parseUniquePolicy(policy), uniquenessKey: 'k', now: NOW, candidates, canReplaceActive });

describe('§5–§9 the conflict decision', function () {
  it('§7.4 duplicate iff state in states AND now < created_at + period', function () {
    const policy = parseUniquePolicy({ period: 'PT1H' });
    expect(isDuplicate(candidate('a', 'available', HOUR - 1), policy, NOW)).to.equal(true);
    expect(isDuplicate(candidate('a', 'available', HOUR), policy, NOW)).to.equal(false);
    expect(isDuplicate(candidate('a', 'completed', 0), policy, NOW)).to.equal(false);
    expect(isDuplicate(candidate('a', 'completed', 0), parseUniquePolicy({ states: ['completed'] }), NOW)).to.equal(true);
    expect(isDuplicate(candidate('a', 'available', 100 * 365 * 24 * HOUR), parseUniquePolicy({}), NOW)).to.equal(true);
  });

  it('inserts when there are no candidates or none match', function () {
    expect(decide({}, [])).to.deep.equal({ action: 'insert' });
    expect(decide({}, [candidate('a', 'completed'), candidate('b', 'cancelled'), candidate('c', 'discarded')])).to.deep.equal({
      action: 'insert',
    });
  });

  it('§5.1 reject names the existing job, its state and the key', function () {
    const decision = decide({ on_conflict: 'reject' }, [candidate('a', 'retryable')]);
    expect(decision.action).to.equal('reject');
    if (decision.action !== 'reject') return;
    expect(decision.error).to.include({
      code: 'duplicate',
      existingJobId: 'a',
      existingJobState: 'retryable',
      uniquenessKey: 'k',
      reason: 'duplicate',
    });
  });

  it('§5.4 ignore returns the oldest matching job', function () {
    const decision = decide({ on_conflict: 'ignore' }, [
      candidate('new', 'available', 10),
      candidate('old', 'scheduled', 20),
      candidate('done', 'completed', 30),
    ]);
    expect(decision).to.deep.include({ action: 'ignore' });
    if (decision.action === 'ignore') expect(decision.existing.id).to.equal('old');
  });

  it('§5.2 replace cancels every matching job, oldest first, and only those', function () {
    const decision = decide({ on_conflict: 'replace' }, [
      candidate('b', 'available', 10),
      candidate('a', 'scheduled', 20, HOUR),
      candidate('c', 'completed', 5),
    ]);
    expect(decision.action).to.equal('replace');
    if (decision.action !== 'replace') return;
    expect(decision.supersede.map((c) => c.id)).to.deep.equal(['a', 'b']);
    expect(decision.scheduledAt).to.equal(null);
  });

  it('§5.2 replace meeting an active job falls back to reject unless the backend can replace active jobs', function () {
    const candidates = [candidate('a', 'available', 20), candidate('b', 'active', 10)];
    const fallback = decide({ on_conflict: 'replace' }, candidates);
    expect(fallback.action).to.equal('reject');
    if (fallback.action === 'reject')
      expect(fallback.error).to.include({ existingJobId: 'b', existingJobState: 'active', reason: 'active_not_replaceable' });
    expect(decide({ on_conflict: 'replace' }, candidates, true).action).to.equal('replace');
  });

  it('§5.3 replace_except_schedule keeps the schedule of a scheduled duplicate only', function () {
    const scheduled = decide({ on_conflict: 'replace_except_schedule' }, [candidate('a', 'scheduled', 0, 2 * HOUR)]);
    expect(scheduled).to.deep.include({ action: 'replace', scheduledAt: NOW + 2 * HOUR });
    const retrying = decide({ on_conflict: 'replace_except_schedule' }, [candidate('a', 'retryable', 0, 2 * HOUR)]);
    expect(retrying).to.deep.include({ action: 'replace', scheduledAt: null });
  });

  it('ties on created_at are broken by insertion order (seq), then by id, so every backend names the same job', function () {
    const bySeq = decide({ on_conflict: 'ignore' }, [
      { ...candidate('a', 'available'), seq: 2 },
      { ...candidate('b', 'available'), seq: 1 },
    ]);
    expect(bySeq.action === 'ignore' && bySeq.existing.id).to.equal('b');
    const byId = decide({ on_conflict: 'ignore' }, [candidate('b', 'available'), candidate('a', 'available')]);
    expect(byId.action === 'ignore' && byId.existing.id).to.equal('a');
    const byTime = decide({ on_conflict: 'ignore' }, [
      { ...candidate('a', 'available', 0), seq: 1 },
      { ...candidate('b', 'available', 5), seq: 2 },
    ]);
    expect(byTime.action === 'ignore' && byTime.existing.id).to.equal('b');
  });

  it('x_successor: a duplicate of an active existing job is kept as its successor, whatever on_conflict says; any other goes by on_conflict', function () {
    const successorOf = (policy: unknown, candidates: ConflictCandidate[], canReplaceActive = false) =>
      decideUniqueConflict({ policy: parseUniquePolicy(policy), uniquenessKey: 'k', now: NOW, candidates, canReplaceActive });
    for (const on_conflict of ['ignore', 'reject', 'replace', 'replace_except_schedule'] as const) {
      for (const canReplaceActive of [false, true]) {
        const decision = successorOf({ on_conflict, x_successor: 'latest' }, [candidate('run', 'active', 10)], canReplaceActive);
        expect(decision, `${on_conflict}, canReplaceActive ${canReplaceActive}`).to.deep.equal({
          action: 'successor',
          existing: candidate('run', 'active', 10),
        });
      }
    }
    // The existing job is the oldest duplicate: a waiting one older than the active one is answered as usual.
    expect(
      successorOf({ on_conflict: 'ignore', x_successor: 'latest' }, [candidate('b', 'active', 10), candidate('a', 'available', 20)]).action,
    ).to.equal('ignore');
    expect(successorOf({ on_conflict: 'ignore', x_successor: 'latest' }, [candidate('a', 'retryable', 10)]).action).to.equal('ignore');
    expect(successorOf({ on_conflict: 'ignore', x_successor: 'latest' }, [candidate('a', 'completed', 10)]).action).to.equal('insert');
    // The spec's decideConflict has no such answer: only a backend declaring the extension asks for it.
    expect(() => decide({ x_successor: 'latest' }, [candidate('run', 'active')])).to.throw(/x_successor needs decideUniqueConflict/);
  });
});
