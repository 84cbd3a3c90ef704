import { expect } from 'chai';
import { DEFAULT_UNIQUE_STATES, isInvalidJobInputError } from '../../src/index.js';
import { created, enqueue, rejection, type SuiteContext } from './suite-context.js';

const job = { type: 'email.send', queue: 'default', args: { user_id: 42, template: 'welcome' } };

async function invalid(ctx: SuiteContext, unique: unknown, args: unknown = job.args) {
  // Arbitrary values on purpose (what a JavaScript caller can pass): the run-time check answers.
  const error = await rejection(enqueue(ctx, { ...job, args, unique: unique as never }));
  expect(isInvalidJobInputError(error), String(error)).to.equal(true);
  expect(error.code).to.equal('invalid_request');
  return error as unknown as { message: string; issues: { path: string; message: string }[] };
}

export function policyValidation(ctx: SuiteContext): void {
  describe('§2.2 policy validation', function () {
    it('§2.2 rejects a keys entry that is not a dimension ("argz") with invalid_request naming unique.keys[1]', async function () {
      const error = await invalid(ctx, { keys: ['type', 'argz'] });
      expect(error.issues.map((i) => i.path)).to.deep.equal(['unique.keys[1]']);
      expect(error.message).to.contain('"argz" is not one of type, queue, args, meta');
    });

    it('§2.2 treats keys as case-sensitive: "Args" is not "args"', async function () {
      const error = await invalid(ctx, { keys: ['Args'] });
      expect(error.issues[0]!.path).to.equal('unique.keys[0]');
      expect(error.message).to.contain('case-sensitive');
    });

    it('§2.2 §14.9 rejects keys ["meta"] without meta_keys and writes nothing', async function () {
      const error = await invalid(ctx, { keys: ['meta'] });
      expect(error.issues.map((i) => i.path)).to.deep.equal(['unique.meta_keys']);
      // Nothing half-written: the same fingerprint under a valid policy is free.
      await created(ctx, { ...job, meta: { tenant_id: 'acme' }, unique: { keys: ['meta'], meta_keys: ['tenant_id'] } });
    });

    it('§2.2 rejects keys ["meta"] with an empty meta_keys', async function () {
      const error = await invalid(ctx, { keys: ['meta'], meta_keys: [] });
      expect(error.issues[0]!.path).to.equal('unique.meta_keys');
    });

    it('§2.2 rejects args_keys naming a key that args does not have, and writes nothing', async function () {
      const error = await invalid(ctx, { keys: ['args'], args_keys: ['user_id', 'userid'] });
      expect(error.issues.map((i) => i.path)).to.deep.equal(['unique.args_keys[1]']);
      await created(ctx, { ...job, unique: { keys: ['args'], args_keys: ['user_id'] } });
    });

    it('§2.2 always includes type: two types with the same args do not collide under keys ["args"]', async function () {
      await created(ctx, { ...job, unique: { keys: ['args'] } });
      await created(ctx, { ...job, type: 'sms.send', unique: { keys: ['args'] } });
    });

    it('§6.2 rejects states containing an invalid state name', async function () {
      const error = await invalid(ctx, { states: ['available', 'done'] });
      expect(error.issues.map((i) => i.path)).to.deep.equal(['unique.states[1]']);
    });

    it('§7.2 rejects a period that is not an ISO 8601 duration', async function () {
      for (const period of ['1h', 'PT1H30', 'P', 'PT', '-PT1H', 'PT1.5H']) {
        const error = await invalid(ctx, { period });
        expect(error.issues[0]!.path, period).to.equal('unique.period');
      }
    });

    it('§13 rejects unknown policy fields and on_conflict values outside the four strategies', async function () {
      const error = await invalid(ctx, { keys: ['type'], on_conflict: 'upsert', unique_for: 60 });
      expect(error.issues.map((i) => i.path).sort()).to.deep.equal(['unique.on_conflict', 'unique.unique_for']);
    });

    it('§13 rejects duplicate items (uniqueItems)', async function () {
      const error = await invalid(ctx, { keys: ['type', 'args', 'args'] });
      expect(error.issues[0]!.path).to.equal('unique.keys[2]');
    });

    it('§2.1 fills in the defaults: keys ["type"], the five non-terminal states, reject, no period', async function () {
      const first = await created(ctx, { ...job, unique: {} });
      expect(first.unique).to.deep.equal({
        keys: ['type'],
        args_keys: null,
        meta_keys: null,
        period: null,
        states: [...DEFAULT_UNIQUE_STATES],
        on_conflict: 'reject',
      });
      const error = await rejection(enqueue(ctx, { ...job, args: { user_id: 7 }, unique: {} }));
      expect(error.code).to.equal('duplicate');
    });

    it('§4.1 rejects args that JSON cannot carry instead of coercing them, and writes nothing', async function () {
      for (const args of [{ user_id: 42, at: undefined }, { user_id: Number.NaN }, { user_id: 10n }, { at: new Date(0) }]) {
        const error = await invalid(ctx, { keys: ['args'] }, args);
        expect(error.issues[0]!.path).to.match(/^args\./);
      }
      await created(ctx, { ...job, unique: { keys: ['args'] } });
    });
  });
}
