import { expect } from 'chai';
import { computeUniquenessKey, parseUniquePolicy } from '../../src/index.js';
import { created, enqueue, rejection, type SuiteContext } from './suite-context.js';

export function keyComputation(ctx: SuiteContext): void {
  describe('§3–§4 dimensions and key computation', function () {
    it('§3.3 §14.2 args_keys: same user_id with a different template is a duplicate', async function () {
      const unique = { keys: ['type', 'args'], args_keys: ['user_id'] } as const;
      const first = await created(ctx, { type: 'email.send', args: { user_id: 42, template: 'welcome' }, unique });
      const error = await rejection(enqueue(ctx, { type: 'email.send', args: { user_id: 42, template: 'reminder' }, unique }));
      expect(error.code).to.equal('duplicate');
      expect(error.existingJobId).to.equal(first.id);
      await created(ctx, { type: 'email.send', args: { user_id: 99, template: 'welcome' }, unique });
    });

    it('§3.3 full args: a different value anywhere in args is distinct work', async function () {
      const unique = { keys: ['args'] } as const;
      await created(ctx, { type: 'report.build', args: { id: 1, opts: { pdf: true } }, unique });
      await created(ctx, { type: 'report.build', args: { id: 1, opts: { pdf: false } }, unique });
    });

    it('§3.3 args_keys select from args[0] when args is an OJS array', async function () {
      const unique = { keys: ['args'], args_keys: ['user_id'] } as const;
      await created(ctx, { type: 'email.send', args: [{ user_id: 42, locale: 'en' }, 'welcome'], unique });
      const error = await rejection(enqueue(ctx, { type: 'email.send', args: [{ user_id: 42, locale: 'fr' }, 'other'], unique }));
      expect(error.code).to.equal('duplicate');
    });

    it('§4.2 object key order does not change the key', async function () {
      const unique = { keys: ['args'] } as const;
      await created(ctx, { type: 'sync.run', args: { a: 1, b: { c: [1, 2], d: 'x' } }, unique });
      const error = await rejection(enqueue(ctx, { type: 'sync.run', args: { b: { d: 'x', c: [1, 2] }, a: 1 }, unique }));
      expect(error.code).to.equal('duplicate');
    });

    it('§4.2 NFC: precomposed and decomposed forms of one string are one key', async function () {
      const unique = { keys: ['args'] } as const;
      await created(ctx, { type: 'user.rename', args: { name: 'Jos\u00e9', ['caf\u00e9']: 1 }, unique });
      const error = await rejection(enqueue(ctx, { type: 'user.rename', args: { name: 'Jose\u0301', ['cafe\u0301']: 1 }, unique }));
      expect(error.code).to.equal('duplicate');
    });

    it('§4.2 NFC is applied to the hashed copy only: the job keeps its args exactly as given', async function () {
      const args = { path: 'Cafe\u0301.txt', ['cle\u0301']: 1 };
      const job = await created(ctx, { type: 'file.index', args, unique: { keys: ['args'] } });
      expect(job.args).to.deep.equal(args);
      expect((await ctx.subject.backend.getJob(job.id))!.args).to.deep.equal(args);
    });

    it('§3.4 meta_keys: same tenant is a duplicate, another tenant is not, other meta is ignored', async function () {
      const unique = { keys: ['type', 'args', 'meta'], meta_keys: ['tenant_id'], on_conflict: 'ignore' } as const;
      const args = { resource: 'products' };
      const acme = await created(ctx, { type: 'cache.warm', args, meta: { tenant_id: 'acme', trace_id: 't1' }, unique });
      const again = await enqueue(ctx, { type: 'cache.warm', args, meta: { tenant_id: 'acme', trace_id: 't2' }, unique });
      expect(again.outcome).to.equal('deduplicated');
      expect(again.job.id).to.equal(acme.id);
      await created(ctx, { type: 'cache.warm', args, meta: { tenant_id: 'globex', trace_id: 't3' }, unique });
    });

    it('§3.2 §14.8 queue scoping: the same type on queues "a" and "b" is distinct', async function () {
      const unique = { keys: ['type', 'queue'] } as const;
      await created(ctx, { type: 'image.resize', queue: 'a', args: {}, unique });
      await created(ctx, { type: 'image.resize', queue: 'b', args: {}, unique });
      const error = await rejection(enqueue(ctx, { type: 'image.resize', queue: 'a', args: {}, unique }));
      expect(error.code).to.equal('duplicate');
    });

    it('§3.2 without the queue dimension uniqueness spans queues', async function () {
      const unique = { keys: ['type'] } as const;
      const first = await created(ctx, { type: 'report.daily', queue: 'a', args: {}, unique });
      const error = await rejection(enqueue(ctx, { type: 'report.daily', queue: 'b', args: {}, unique }));
      expect(error.existingJobId).to.equal(first.id);
    });

    it('§4.1 the key a backend records is computeUniquenessKey of the job (the same on every backend)', async function () {
      const input = {
        type: 'email.send',
        queue: 'notifications',
        args: { user_id: 42, template: 'welcome' },
        unique: { keys: ['type', 'queue', 'args'], args_keys: ['user_id'] },
      } as const;
      const job = await created(ctx, input);
      const expected = computeUniquenessKey(input, parseUniquePolicy(input.unique));
      expect(job.uniqueness_key).to.equal(expected.key);
      const error = await rejection(enqueue(ctx, input));
      expect(error.uniquenessKey).to.equal(expected.key);
    });

    it('a job without unique is never deduplicated', async function () {
      const a = await created(ctx, { type: 'plain.job', args: { x: 1 } });
      const b = await created(ctx, { type: 'plain.job', args: { x: 1 } });
      expect(a.id).to.not.equal(b.id);
      expect(a.uniqueness_key).to.equal(null);
    });
  });
}
