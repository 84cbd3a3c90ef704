/**
 * What counting a unique add (`ojs.unique.adds`, telemetry/unique-add-counter.ts) costs per add:
 * without a meter provider (what every add pays), and with the SDK's `MeterProvider` registered;
 * beside it, the SDK's synchronous `Counter.add` with the same attributes, which the observable
 * counter replaces.
 *
 *   npx tsx bench/unique-add-counter.ts
 *
 * Median of 5 rounds of BENCH_N calls each, after one unrecorded round.
 */
import { metrics } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { countUniqueAdd } from '../telemetry/unique-add-counter.js';

const N = Number(process.env.BENCH_N ?? 2_000_000);

class Reader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/** ns per call of `count`, median of the recorded rounds. */
function measure(count: (outcome: 'created' | 'deduplicated') => void, n = N): number {
  const rounds: number[] = [];
  for (let round = 0; round < 6; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) count(i % 8 === 0 ? 'deduplicated' : 'created');
    if (round > 0) rounds.push(Number(process.hrtime.bigint() - start) / n);
  }
  return rounds.sort((a, b) => a - b)[2]!;
}

const count = (outcome: 'created' | 'deduplicated') => countUniqueAdd('bullmq', 'mail', 'welcome', outcome);
const without = measure(count);
const reader = new Reader();
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
const withSdk = measure(count);
const counter = metrics.getMeter('bench').createCounter('bench.adds');
const synchronous = measure(
  (outcome) =>
    counter.add(1, {
      'ojs.unique.outcome': outcome,
      'ojs.job.type': 'welcome',
      'messaging.destination.name': 'mail',
      'messaging.system': 'bullmq',
    }),
  N / 10,
);
// The counts reached the SDK.
const { resourceMetrics } = await reader.collect();
const points = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics.flatMap((metric) => metric.dataPoints as unknown[]));
if (points.length !== 4) throw new Error(`expected 4 data points, got ${points.length}`);

console.log(`countUniqueAdd per add (N=${N}, median of 5 rounds), Node ${process.version}`);
console.log('| what | ns |');
console.log('|---|---|');
console.log(`| countUniqueAdd, no meter provider | ${without.toFixed(1)} |`);
console.log(`| countUniqueAdd, SDK MeterProvider | ${withSdk.toFixed(1)} |`);
console.log(`| SDK Counter.add, same attributes (for comparison) | ${synchronous.toFixed(1)} |`);
