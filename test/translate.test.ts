/**
 * ojs-unique/translate beyond the reference rows (test/expressiveness, run on every backend):
 * options no policy can express, malformed options, and every translator's output is a policy
 * the validator accepts.
 */
import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { isUntranslatableOptionError, parseUniquePolicy, UntranslatableOptionError } from '../src/index.js';
import { fromBullMQ, fromFaktory, fromGraphileWorker, fromOban, fromObanPro, fromZizq, zizqUniqueKey } from '../src/translate/index.js';
import { secondsToPeriod } from '../src/translate/seconds-to-period.js';
import { INEXPRESSIBLE, ROWS } from './expressiveness/expressiveness-rows.js';

function untranslatable(call: () => unknown): UntranslatableOptionError {
  try {
    call();
  } catch (error) {
    expect(isUntranslatableOptionError(error), String(error)).to.equal(true);
    expect((error as UntranslatableOptionError).code).to.equal('untranslatable');
    return error as UntranslatableOptionError;
  }
  return expect.fail('expected UntranslatableOptionError');
}

describe('ojs-unique/translate', function () {
  describe('options no policy can express (the closing list of docs/expressiveness.md)', function () {
    for (const row of INEXPRESSIBLE) {
      it(`${row.system} ${row.option}: ${row.call} throws naming ${row.names}`, function () {
        const error = untranslatable(row.translate);
        expect(error.option).to.equal(row.names);
        expect(error.message).to.contain(row.names);
      });
    }
  });

  describe('every reference row translates to a policy the validator accepts', function () {
    for (const row of ROWS) {
      it(`${row.system} ${row.option}`, function () {
        const policy = row.translate();
        if (policy !== null) expect(() => parseUniquePolicy(policy)).to.not.throw();
      });
    }
  });

  describe('malformed options are refused naming the option, in the system vocabulary', function () {
    const cases: [string, () => unknown, string, string][] = [
      ['oban', () => fromOban({ period: -5 }), 'period', 'must be positive'],
      ['oban', () => fromOban({ period: 1.5 }), 'period', 'whole seconds'],
      ['oban', () => fromOban({ period: [2, 'fortnights'] as never }), 'period', 'expected seconds'],
      ['oban', () => fromOban({ fields: ['worker', 'worker'] }), 'fields[1]', 'more than once'],
      ['oban', () => fromOban({ states: ['done' as never] }), 'states[0]', 'not one of'],
      ['oban', () => fromOban({ timestamp: 'updated_at' as never }), 'timestamp', 'not one of'],
      ['oban', () => fromOban({ replace: { finished: ['args'] } as never }), 'replace.finished', 'not an option'],
      ['oban', () => fromOban({ perod: 5 } as never), 'perod', 'not an option'],
      ['oban', () => fromOban('yes' as never), 'options', 'expected an object'],
      ['oban-pro', () => fromObanPro({ group: 'some' as never }), 'group', 'not one of'],
      ['oban-pro', () => fromObanPro({ period: 0 }), 'period', 'must be positive'],
      ['zizq', () => fromZizq({} as never), 'uniqueKey', 'required'],
      ['zizq', () => fromZizq({ uniqueKey: '' }), 'uniqueKey', 'non-empty'],
      ['zizq', () => fromZizq({ uniqueKey: 'k', uniqueWhile: 'forever' as never }), 'uniqueWhile', 'not one of'],
      ['faktory', () => fromFaktory({ unique_for: '600' as never }), 'unique_for', 'expected seconds'],
      ['faktory', () => fromFaktory({ unique_for: 0 }), 'unique_for', 'positive'],
      ['faktory', () => fromFaktory({ unique_for: 0.0001 }), 'unique_for', 'at least 0.001'],
      ['faktory', () => fromFaktory({ unique_for: 5, unique_until: 'finish' as never }), 'unique_until', 'not one of'],
      ['bullmq', () => fromBullMQ({ deduplication: {} as never }), 'deduplication.id', 'required'],
      ['bullmq', () => fromBullMQ({ deduplication: { id: 'a', ttl: 1.5 } }), 'deduplication.ttl', 'whole milliseconds'],
      ['bullmq', () => fromBullMQ({ deduplication: { id: 'a', tll: 5 } as never }), 'deduplication.tll', 'not an option'],
      ['bullmq', () => fromBullMQ({ jobID: 'a' } as never), 'jobID', 'not an option'],
      ['graphile-worker', () => fromGraphileWorker({ jobKey: 'k', jobKeyMode: 'dedupe' as never }), 'jobKeyMode', 'not one of'],
    ];
    for (const [system, call, option, problem] of cases) {
      it(`${system} ${option}: ${problem}`, function () {
        const error = untranslatable(call);
        expect({ system: error.system, option: error.option }).to.deep.equal({ system, option });
        expect(error.message).to.contain(problem);
      });
    }
  });

  it('only own properties are options: an inherited one is neither read nor refused', function () {
    const options = Object.create({ period: 'infinity', perod: 1 }) as Record<string, unknown>;
    options.keys = ['id'];
    expect(fromOban(options as never)).to.deep.include({ period: 'PT60S', args_keys: ['id'] });
  });

  it('translators return null for "not unique": Faktory nil or absent, BullMQ without jobId or deduplication, Graphile without jobKey', function () {
    expect(fromFaktory({})).to.equal(null);
    expect(fromFaktory({ unique_for: null, unique_until: 'start' })).to.equal(null);
    expect(fromBullMQ({})).to.equal(null);
    expect(fromGraphileWorker({ jobKeyMode: 'unsafe_dedupe' })).to.equal(null);
  });

  it('BullMQ: deduplication decides when jobId is given too; ttl 0 is simple mode; extend without ttl has nothing to extend', function () {
    expect(fromBullMQ({ jobId: 'j', deduplication: { id: 'd' } })).to.deep.include({ x_key: 'd' });
    expect(fromBullMQ({ deduplication: { id: 'd', ttl: 0 } })).to.deep.equal(fromBullMQ({ deduplication: { id: 'd' } }));
    expect(fromBullMQ({ deduplication: { id: 'd', extend: true } })).to.not.have.property('x_period_anchor');
  });

  it('Oban: a replace entry for a state the unique states do not check is dropped (it can never apply), and the timestamp needs a period', function () {
    expect(fromOban({ states: ['available'], replace: { scheduled: ['args'] } })).to.not.have.property('x_update');
    expect(fromOban({ period: 'infinity', timestamp: 'scheduled_at' })).to.not.have.property('x_period_anchor');
    expect(fromOban({ replace: { executing: ['max_attempts'] } })).to.deep.include({ x_update: { active: ['max_attempts'] } });
  });

  it('Zizq: zizqUniqueKey() is the whole payload, zizqUniqueKey(...fields) those fields', function () {
    expect(zizqUniqueKey()).to.deep.equal({ payloadFields: [] });
    expect(fromZizq({ uniqueKey: zizqUniqueKey('to', 'subject') })).to.deep.include({ args_keys: ['to', 'subject'] });
  });

  it('seconds become an ISO 8601 period to the millisecond', function () {
    expect([600, 0.5, 1.25, 0.001, 90.1, 1e-4, 0, -1, Number.NaN, Number.POSITIVE_INFINITY].map(secondsToPeriod)).to.deep.equal([
      'PT600S',
      'PT0.5S',
      'PT1.25S',
      'PT0.001S',
      'PT90.1S',
      null,
      null,
      null,
      null,
      null,
    ]);
  });
});

describe('docs/expressiveness.md', function () {
  it('shows every reference row and every inexpressible option by its translator call', async function () {
    const doc = await readFile(new URL('../docs/expressiveness.md', import.meta.url), 'utf8');
    const missing = [...ROWS, ...INEXPRESSIBLE].map((row) => row.call).filter((call) => !doc.includes(`\`${call}\``));
    expect(missing).to.deep.equal([]);
  });
});
