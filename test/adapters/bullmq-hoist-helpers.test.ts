/**
 * BullMQ's helper functions are defined once per block of the function library, not on every
 * call (bullmq-script-set.ts, `hoistHelpers`), and only where moving them changes nothing.
 */
import { expect } from 'chai';
import { BULLMQ_ADD_SCRIPTS, installedBullMQ, loadAddScripts } from '../../adapters/bullmq/bullmq-host.js';
import { hoistHelpers } from '../../adapters/bullmq/bullmq-script-set.js';

describe('bullmq adapter: BullMQ helpers hoisted out of the per-call body', function () {
  it("every helper of the installed BullMQ's add scripts is hoisted; the rest is left in order", function () {
    const scripts = loadAddScripts(installedBullMQ());
    for (const name of Object.keys(BULLMQ_ADD_SCRIPTS) as (keyof typeof BULLMQ_ADD_SCRIPTS)[]) {
      const content = scripts[name].content;
      const { helpers, body } = hoistHelpers(content);
      const defined = content.match(/^local function \w+/gm) ?? [];
      expect(defined.length, name).to.be.greaterThan(0);
      expect(helpers.match(/^local function \w+/gm), name).to.deep.equal(defined);
      expect(body, name).not.to.match(/^local function /m);
      expect(body.split('\n').filter((line) => content.includes(line)).length, name).to.equal(body.split('\n').length);
    }
  });

  it('a helper reading a top-level local, KEYS or ARGV keeps the script whole', function () {
    for (const read of ['return queueKey', 'return KEYS[1]', 'return ARGV[1]', 'if a then return queueKey end']) {
      const content = `local queueKey = KEYS[1]\nlocal function helper(a)\n  ${read}\nend\nreturn helper(1)`;
      expect(hoistHelpers(content), read).to.deep.equal({ helpers: '', body: content });
    }
  });

  it('a helper using only its parameters, its own locals, rcall and names in strings is hoisted', function () {
    const helper = [
      'local function helper(queueKey, a)',
      '  local n = rcall("GET", queueKey) -- queueKey: the parameter',
      '  if a then',
      '    local other = "queueKey"',
      '    return other',
      '  end',
      '  return n',
      'end',
    ].join('\n');
    const content = `local queueKey = KEYS[1]\nlocal rcall = redis.call\n${helper}\nreturn helper(queueKey)`;
    expect(hoistHelpers(content)).to.deep.equal({
      helpers: helper,
      body: 'local queueKey = KEYS[1]\nlocal rcall = redis.call\nreturn helper(queueKey)',
    });
  });

  it("a helper's own local used after its block ends keeps the script whole", function () {
    const content = [
      'local other = 1',
      'local function helper(a)',
      '  if a then',
      '    local other = 2',
      '  end',
      '  return other',
      'end',
    ].join('\n');
    expect(hoistHelpers(content).helpers).to.equal('');
  });
});
