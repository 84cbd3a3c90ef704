/**
 * The `ojs.unique.adds` counter (src/unique-add-telemetry.ts names it): one add per unique add,
 * with its outcome, type, queue and host.
 *
 * Without a registered meter provider nothing is recorded and nearly nothing is spent: one look
 * at the API's global per add. The meter is asked for lazily, once per meter provider (the API
 * hands a no-op meter for good to whoever asks before the application registers its provider),
 * and the instrument made once on it.
 *
 * The instrument is the asynchronous form of a counter (an observable counter: a monotonic sum,
 * the same data to an exporter), fed from counts kept here: the SDK's synchronous `Counter.add`
 * hashes the attributes on every call, a noticeable share of an insert's own Node CPU
 * (docs/benchmarks.md, "Telemetry"); counting here is a few map look-ups, and the SDK reads the
 * totals when it collects.
 */
import { UNIQUE_ADDS_METRIC, uniqueAddAttributes, type MessagingSystem, type UniqueAddOutcome } from '../src/unique-add-telemetry.js';
import { otelApi } from './otel-api.js';
import type { MeterProvider } from '@opentelemetry/api';

/** The instrumentation scope every instrument of the library is made under. */
export const INSTRUMENTATION_SCOPE = 'ojs-unique';

/** One attribute set's count since the meter provider was registered. */
interface Count {
  attributes: Record<string, string | boolean>;
  value: number;
}

/** Counts by host, queue, type and outcome (look-ups by the strings given, no key built per add). */
type Counts = Map<MessagingSystem, Map<string, Map<string, Partial<Record<UniqueAddOutcome | `report:${UniqueAddOutcome}`, Count>>>>>;

let seenProvider: MeterProvider | undefined;
let counts: Counts | null = null;

/** Counts one unique add (`reportOnly`: under a report-only policy, `outcome` being what it would have done). */
export function countUniqueAdd(system: MessagingSystem, queue: string, type: string, outcome: UniqueAddOutcome, reportOnly = false): void {
  const api = otelApi();
  if (api === null) return;
  const provider = api.metrics.getMeterProvider();
  if (provider !== seenProvider) {
    seenProvider = provider;
    counts = instrument(provider, api.createNoopMeter());
  }
  if (counts === null) return;
  let byQueue = counts.get(system);
  if (byQueue === undefined) counts.set(system, (byQueue = new Map()));
  let byType = byQueue.get(queue);
  if (byType === undefined) byQueue.set(queue, (byType = new Map()));
  let byOutcome = byType.get(type);
  if (byOutcome === undefined) byType.set(type, (byOutcome = {}));
  const slot = reportOnly ? (`report:${outcome}` as const) : outcome;
  const count = byOutcome[slot];
  if (count === undefined) byOutcome[slot] = { attributes: uniqueAddAttributes(system, queue, type, outcome, reportOnly), value: 1 };
  else count.value += 1;
}

/** The instrument on `provider`'s meter, reading counts kept from now on; null for the no-op meter. */
function instrument(provider: MeterProvider, noopMeter: unknown): Counts | null {
  const meter = provider.getMeter(INSTRUMENTATION_SCOPE);
  if (meter === noopMeter) return null;
  const kept: Counts = new Map();
  meter
    .createObservableCounter(UNIQUE_ADDS_METRIC.name, { unit: UNIQUE_ADDS_METRIC.unit, description: UNIQUE_ADDS_METRIC.description })
    .addCallback((result) => {
      for (const byQueue of kept.values())
        for (const byType of byQueue.values())
          for (const byOutcome of byType.values())
            for (const count of Object.values(byOutcome)) result.observe(count!.value, count!.attributes);
    });
  return kept;
}
