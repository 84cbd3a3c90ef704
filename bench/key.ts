/**
 * Key computation against the cost of serialising and hashing the same args (not a test:
 * machines are shared and noisy, so read the figures as ratios within one run).
 *
 * Method: for a small args object (~50 B of JSON) and a ~10 KB one (records with non-ASCII
 * text), `computeUniquenessKey` (policy keys type+queue+args, args hashed whole) is timed against
 * the baseline `crypto.hash('sha256', JSON.stringify(args), 'hex')`, the cheapest way to hash the
 * same args without canonical form or validation (one-shot `crypto.hash`, as the key uses: the
 * Hash object of `createHash()` costs as much as serialising small args, and would flatter the
 * small ratio). After a warm-up, rounds alternate the key and
 * its baseline, each round timing one batch of each; the ratio of a round is keys/s ÷ baseline/s
 * in that round, and the figures printed are the medians over the rounds. A ratio of 1 would mean
 * a key costs no more than JSON.stringify plus SHA-256.
 *
 *   npm run bench:key
 */
import { hash } from 'node:crypto';
import { computeUniquenessKey, parseUniquePolicy, type JobInput } from '../src/index.js';

const ROUNDS = 15;

const small: JobInput = { type: 'email.send', queue: 'notifications', args: { user_id: 42, template: 'welcome', locale: 'en-US' } };
const large: JobInput = {
  type: 'catalog.sync',
  queue: 'default',
  args: {
    tenant: 'acme',
    items: Array.from({ length: 118 }, (_, i) => ({
      sku: `SKU-${i.toString().padStart(6, '0')}`,
      name: `Product ${i} — crème brûlée`,
      price: 12.5 + i,
      tags: ['a', 'b'],
    })),
  },
};
const policy = parseUniquePolicy({ keys: ['type', 'queue', 'args'] });
const selective = parseUniquePolicy({ keys: ['type', 'args'], args_keys: ['tenant'] });

/** Operations per second of one timed batch. */
function rate(fn: () => unknown, iterations: number): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) fn();
  return iterations / (Number(process.hrtime.bigint() - start) / 1e9);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

interface Case {
  label: string;
  key: () => unknown;
  baseline: () => unknown;
  iterations: number;
}

const cases: Case[] = [
  {
    label: `small args (${JSON.stringify(small.args).length} B)`,
    key: () => computeUniquenessKey(small, policy),
    baseline: () => hash('sha256', JSON.stringify(small.args), 'hex'),
    iterations: 50_000,
  },
  {
    label: `~10 KB args (${JSON.stringify(large.args).length} B)`,
    key: () => computeUniquenessKey(large, policy),
    baseline: () => hash('sha256', JSON.stringify(large.args), 'hex'),
    iterations: 1_000,
  },
];

for (const c of cases) {
  rate(c.key, c.iterations);
  rate(c.baseline, c.iterations);
}
const results = cases.map(() => ({ keys: [] as number[], baseline: [] as number[], ratio: [] as number[] }));
for (let round = 0; round < ROUNDS; round++) {
  cases.forEach((c, i) => {
    const keys = rate(c.key, c.iterations);
    const baseline = rate(c.baseline, c.iterations);
    results[i]!.keys.push(keys);
    results[i]!.baseline.push(baseline);
    results[i]!.ratio.push(keys / baseline);
  });
}

const format = (n: number) => Math.round(n).toLocaleString('en-US');
console.log(
  `Node ${process.version}, median of ${ROUNDS} interleaved rounds; ratio = keys/s ÷ (JSON.stringify + SHA-256 of the same args)/s\n`,
);
console.log(`${'case'.padEnd(26)} ${'keys/s'.padStart(11)} ${'baseline/s'.padStart(11)} ${'ratio'.padStart(6)}  (ratio range)`);
cases.forEach((c, i) => {
  const r = results[i]!;
  const ratios = [...r.ratio].sort((a, b) => a - b);
  console.log(
    `${c.label.padEnd(26)} ${format(median(r.keys)).padStart(11)} ${format(median(r.baseline)).padStart(11)} ${median(r.ratio).toFixed(2).padStart(6)}  (${ratios[0]!.toFixed(2)}–${ratios.at(-1)!.toFixed(2)})`,
  );
});
const selectiveRate = median(Array.from({ length: 5 }, () => rate(() => computeUniquenessKey(large, selective), 50_000)));
console.log(`\n~10 KB args, args_keys: ["tenant"] (only the selected key is walked): ${format(selectiveRate)} keys/s`);
