/** ProbeHints: which fingerprints get the duplicate probe (pure; the probe itself is tested against Redis in bullmq-duplicate-probe.test.ts). */
import { expect } from 'chai';
import { ProbeHints } from '../../adapters/bullmq/bullmq-probe-hints.js';

describe('bullmq adapter: probe hints', function () {
  it('a hint lasts ttlMs after the add that last saw the job; every duplicate renews it', function () {
    const hints = new ProbeHints(10, 2000);
    hints.remember('fp', 1_000);
    expect(hints.has('fp', 2_999)).to.equal(true);
    hints.remember('fp', 2_999);
    expect(hints.has('fp', 4_998)).to.equal(true);
    expect(hints.has('fp', 4_999)).to.equal(false);
    // An expired hint is gone, not merely skipped.
    expect(hints.size).to.equal(0);
  });

  it('a miss forgets the hint', function () {
    const hints = new ProbeHints(10, 2000);
    hints.remember('fp', 0);
    hints.forget('fp');
    expect(hints.has('fp', 1)).to.equal(false);
  });

  it('holds at most capacity fingerprints, dropping the least recently used', function () {
    const hints = new ProbeHints(3, 2000);
    for (const key of ['a', 'b', 'c']) hints.remember(key, 0);
    hints.remember('a', 1); // a is now the most recent
    hints.remember('d', 2);
    expect(hints.size).to.equal(3);
    expect(['a', 'b', 'c', 'd'].filter((key) => hints.has(key, 3))).to.deep.equal(['a', 'c', 'd']);
  });

  it('answers as a least-recently-used map with expiry over a long random run of remember, has and forget', function () {
    // The reference: a Map in remembering order (delete and set again), its first entry dropped.
    const capacity = 5;
    const reference = new Map<string, number>();
    const hints = new ProbeHints(capacity, 50);
    let seed = 7;
    const random = (n: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % n;
    for (let now = 0; now < 5_000; now++) {
      const key = `k${random(9)}`;
      const op = random(3);
      if (op === 0) {
        reference.delete(key);
        reference.set(key, now + 50);
        if (reference.size > capacity) reference.delete(reference.keys().next().value!);
        hints.remember(key, now);
      } else if (op === 1) {
        const expiry = reference.get(key);
        const expected = expiry !== undefined && now < expiry;
        if (expiry !== undefined && !expected) reference.delete(key);
        expect(hints.has(key, now), `has ${key} at ${now}`).to.equal(expected);
      } else {
        reference.delete(key);
        hints.forget(key);
      }
      expect(hints.size, `size at ${now}`).to.equal(reference.size);
    }
  });
});
