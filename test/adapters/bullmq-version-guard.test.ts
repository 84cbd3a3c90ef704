/**
 * The start-up guard on the BullMQ internals the adapter reuses (its add scripts): an unsupported
 * BullMQ fails with a `BackendError` saying what is missing, before any script runs.
 */
import { createRequire } from 'node:module';
import { expect } from 'chai';
import { composeScripts, SUPPORTED_BULLMQ_RANGE, type BullMQScriptSource } from '../../adapters/bullmq/bullmq-script-set.js';
import { BackendError } from '../../src/index.js';

const installed = createRequire(import.meta.url)('bullmq/dist/cjs/scripts') as Record<string, BullMQScriptSource>;
const version = (createRequire(import.meta.url)('bullmq/package.json') as { version: string }).version;

function refusal(run: () => unknown): BackendError {
  try {
    run();
  } catch (error) {
    expect(error).to.be.instanceOf(BackendError);
    expect((error as BackendError).written).to.equal(false);
    expect((error as Error).message).to.contain(SUPPORTED_BULLMQ_RANGE);
    return error as BackendError;
  }
  throw new Error('expected a BackendError');
}

describe('bullmq adapter: start-up guard on the installed BullMQ', function () {
  it('accepts the installed BullMQ and splices its three add scripts into unique-add', function () {
    const [uniqueAdd] = composeScripts(version, installed);
    expect(uniqueAdd!.lua).to.not.match(/^--- @bullmq/m);
    for (const name of ['addStandardJob', 'addDelayedJob', 'addPrioritizedJob']) {
      expect(uniqueAdd!.lua).to.contain(`local function __bullmq_${name}(KEYS, ARGV)\n${installed[name]!.content}\nend`);
    }
  });

  it('refuses another major version', function () {
    expect(refusal(() => composeScripts('7.0.0', installed)).message).to.contain('version 7.0.0');
    expect(refusal(() => composeScripts('5.67.2', installed)).message).to.contain('version 5.67.2');
  });

  it('refuses a BullMQ whose add scripts are missing, take other keys, or no longer read the arguments the same way', function () {
    const without = { ...installed, addDelayedJob: undefined };
    expect(refusal(() => composeScripts(version, without)).message).to.contain('script addDelayedJob is missing');
    const rekeyed = { ...installed, addStandardJob: { ...installed.addStandardJob!, keys: 10 } };
    expect(refusal(() => composeScripts(version, rekeyed)).message).to.contain('addStandardJob takes 10 keys');
    const relaid = { ...installed, addPrioritizedJob: { ...installed.addPrioritizedJob!, content: 'return 1' } };
    expect(refusal(() => composeScripts(version, relaid)).message).to.contain('addPrioritizedJob no longer contains');
  });
});
