/**
 * §8.1 strong uniqueness on BullMQ under real concurrency: 500 adds of one fingerprint per round,
 * from two processes with two Redis connections each (four connections), 10 rounds per
 * strategy. After every round exactly one job with the fingerprint is live in BullMQ's own
 * lists, and every caller's outcome agrees with it.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Queue } from 'bullmq';
import { expect } from 'chai';
import { withUniqueness, type UniqueQueue } from '../../adapters/bullmq/index.js';
import { raceRound } from './bullmq-concurrency-burst.js';
import { useRedisPrefix } from './bullmq-test-redis.js';

const ADDS = 500;
const ROUNDS = 10;

describe('bullmq adapter: §8.1 strong uniqueness across processes and connections', function () {
  this.timeout(120_000);
  const ctx = useRedisPrefix('bullmq-concurrency.test.ts');
  let child: ChildProcessWithoutNullStreams;
  let lines: AsyncIterator<string>;
  let local: UniqueQueue[];
  let observer: Queue;

  beforeEach(async function () {
    child = spawn(process.execPath, ['--import', 'tsx', 'test/adapters/bullmq-concurrency-producer.ts', ctx.prefix, '2'], {
      stdio: 'pipe',
    });
    child.stderr.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    local = [ctx.connect(), ctx.connect()].map((connection) => {
      const queue = new Queue('race', { connection, prefix: ctx.prefix });
      ctx.closeLater(queue);
      return withUniqueness(queue);
    });
    observer = ctx.queue('race');
    expect((await lines.next()).value).to.equal('ready');
  });

  afterEach(async function () {
    child.stdin.end('exit\n');
    await new Promise((resolve) => child.once('exit', resolve));
  });

  const round = (strategy: string, n: number) => raceRound({ stdin: child.stdin, lines }, local, observer, strategy, n, ADDS);

  it(`reject: ${ROUNDS} rounds of ${ADDS} adds, exactly one created per round, every other caller rejected naming it`, async function () {
    for (let n = 0; n < ROUNDS; n++) {
      const { outcomes, live } = await round('reject', n);
      expect(outcomes.filter((o) => o.outcome === 'error')).to.deep.equal([]);
      const created = outcomes.filter((o) => o.outcome === 'created');
      expect(created, `round ${n}`).to.have.length(1);
      expect(live).to.deep.equal([created[0]!.id]);
      expect(outcomes.filter((o) => o.outcome === 'rejected' && o.existingJobId === created[0]!.id)).to.have.length(ADDS - 1);
    }
  });

  it(`ignore: ${ROUNDS} rounds of ${ADDS} adds, one created per round, every caller gets its id`, async function () {
    for (let n = 0; n < ROUNDS; n++) {
      const { outcomes, live } = await round('ignore', n);
      const created = outcomes.filter((o) => o.outcome === 'created');
      expect(created, `round ${n}`).to.have.length(1);
      expect(live).to.deep.equal([created[0]!.id]);
      expect(
        outcomes.filter((o) => o.outcome === 'deduplicated' && o.id === created[0]!.id && o.existingJobId === created[0]!.id),
      ).to.have.length(ADDS - 1);
    }
  });

  it(`replace: ${ROUNDS} rounds of ${ADDS} adds, one live job per round, the replaced jobs form one unbroken chain`, async function () {
    for (let n = 0; n < ROUNDS; n++) {
      const { outcomes, live } = await round('replace', n);
      expect(outcomes.filter((o) => o.outcome === 'error')).to.deep.equal([]);
      expect(
        outcomes.filter((o) => o.outcome === 'created'),
        `round ${n}`,
      ).to.have.length(1);
      const replacing = outcomes.filter((o) => o.outcome === 'replaced');
      expect(replacing).to.have.length(ADDS - 1);
      expect(live).to.have.length(1);
      // Every job but the live one was replaced exactly once, each replace cancelled exactly one job.
      const replaced = replacing.flatMap((o) => o.replacedIds!);
      expect(replaced).to.have.length(ADDS - 1);
      const allIds = outcomes.map((o) => o.id!);
      expect(new Set(replaced)).to.deep.equal(new Set(allIds.filter((id) => id !== live[0])));
    }
  });
});
