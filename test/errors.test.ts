import { expect } from 'chai';
import * as errors from '../src/errors.js';

describe('typed errors', function () {
  it('carry a stable code, a name and the cause', function () {
    const cause = new Error('ECONNRESET');
    const error = new errors.BackendError('bullmq', 'connection lost', { cause });
    expect(error).to.include({ code: 'backend_error', name: 'BackendError', backend: 'bullmq', cause });
    expect(error.message).to.equal('bullmq: connection lost');
    expect(error).to.be.instanceOf(errors.OjsUniqueError).and.instanceOf(Error);
  });

  it('guards recognise errors from another copy of the package', async function () {
    // A second module instance stands for a second copy of ojs-unique in node_modules.
    const copy = (await import(`../src/errors.js?copy=${Date.now()}`)) as typeof errors;
    expect(copy.DuplicateJobError).to.not.equal(errors.DuplicateJobError);
    const foreign = new copy.DuplicateJobError({ existingJobId: '1', existingJobState: 'active', uniquenessKey: 'k' });
    expect(foreign instanceof errors.DuplicateJobError).to.equal(false);
    expect(errors.isDuplicateJobError(foreign)).to.equal(true);
    expect(errors.isOjsUniqueError(foreign)).to.equal(true);
    expect(errors.isInvalidJobInputError(foreign)).to.equal(false);
    expect(errors.isInvalidJobInputError(new copy.InvalidJobInputError([{ path: 'unique', message: 'x' }]))).to.equal(true);
    expect(errors.isBackendError(new copy.BackendError('x', 'y'))).to.equal(true);
  });

  it('guards are not fooled by a look-alike name or code', function () {
    const lookalike = Object.assign(new Error('x'), { name: 'DuplicateJobError', code: 'duplicate' });
    expect(errors.isDuplicateJobError(lookalike)).to.equal(false);
    expect(errors.isOjsUniqueError(null)).to.equal(false);
    expect(errors.isOjsUniqueError('duplicate')).to.equal(false);
  });

  it('a duplicate never puts the uniqueness key in its message (§12)', function () {
    const error = new errors.DuplicateJobError({
      existingJobId: '1',
      existingJobState: 'active',
      uniquenessKey: 'deadbeef',
      reason: 'active_not_replaceable',
    });
    expect(error.message).to.not.contain('deadbeef');
    expect(error.message).to.contain('active');
    expect(String(error)).to.not.contain('deadbeef');
  });
});
