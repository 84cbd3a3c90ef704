/**
 * Keys per second for a small and a ~10 KB args object (not a test: machines are shared and
 * noisy, so read the figures as relative). Also prints the cost of the canonicalisation step
 * alone against a plain JSON.stringify of the same object, measured in the same run.
 *
 *   npm run bench:key
 */
import { computeUniquenessKey, parseUniquePolicy, type JobInput } from '../src/index.js';
import { canonicalPreimage } from '../src/internal.js';

const small: JobInput = { type: 'email.send', queue: 'notifications', args: { user_id: 42, template: 'welcome', locale: 'en-US' } };
const large: JobInput = {
  type: 'catalog.sync',
  queue: 'default',
  args: {
    tenant: 'acme',
    items: Array.from({ length: 118 }, (_, i) => ({ sku: `SKU-${i.toString().padStart(6, '0')}`, name: `Product ${i} — crème brûlée`, price: 12.5 + i, tags: ['a', 'b'] })),
  },
};
const policy = parseUniquePolicy({ keys: ['type', 'queue', 'args'] });
const selective = parseUniquePolicy({ keys: ['type', 'args'], args_keys: ['tenant'] });

function measure(label: string, fn: () => unknown, iterations: number): number {
  for (let i = 0; i < Math.min(2000, iterations); i++) fn(); // warm-up
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) fn();
    runs.push(iterations / (Number(process.hrtime.bigint() - start) / 1e9));
  }
  runs.sort((a, b) => a - b);
  const median = runs[2]!;
  console.log(`${label.padEnd(52)} ${Math.round(median).toLocaleString('en-US').padStart(10)} /s  (runs ${Math.round(runs[0]!).toLocaleString('en-US')}–${Math.round(runs[4]!).toLocaleString('en-US')})`);
  return median;
}

console.log(`args sizes: small ${JSON.stringify(small.args).length} B, large ${JSON.stringify(large.args).length} B; median of 5 runs\n`);
const smallKeys = measure('computeUniquenessKey, small args', () => computeUniquenessKey(small, policy), 50_000);
const smallJson = measure('  baseline: JSON.stringify, small args', () => JSON.stringify(small), 50_000);
const largeKeys = measure('computeUniquenessKey, ~10 KB args', () => computeUniquenessKey(large, policy), 2_000);
const largeJson = measure('  baseline: JSON.stringify, ~10 KB args', () => JSON.stringify(large), 2_000);
measure('canonicalPreimage only, ~10 KB args', () => canonicalPreimage(large, policy), 2_000);
measure('computeUniquenessKey, ~10 KB args, args_keys: [tenant]', () => computeUniquenessKey(large, selective), 50_000);
console.log(`\nratio to JSON.stringify: small ${(smallJson / smallKeys).toFixed(1)}x slower, large ${(largeJson / largeKeys).toFixed(1)}x slower`);
