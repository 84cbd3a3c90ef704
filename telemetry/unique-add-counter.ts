/**
 * The `ojs.unique.adds` counter (src/unique-add-telemetry.ts names it): one add per unique add,
 * with its outcome, type, queue and host.
 *
 * Without a registered meter provider nothing is recorded and nearly nothing is spent: one look
 * at the API's global per add. The meter is asked for lazily and the counter made once per
 * meter provider, since the API hands out a no-op meter for good to whoever asks before the
 * application registers its provider.
 */
import { UNIQUE_ADDS_METRIC, uniqueAddAttributes, type MessagingSystem, type UniqueAddOutcome } from '../src/unique-add-telemetry.js';
import { otelApi } from './otel-api.js';
import type { Counter, MeterProvider } from '@opentelemetry/api';

/** The instrumentation scope every instrument of the library is made under. */
export const INSTRUMENTATION_SCOPE = 'ojs-unique';

let seenProvider: MeterProvider | undefined;
let counter: Counter | null = null;

/** Counts one unique add. */
export function countUniqueAdd(system: MessagingSystem, queue: string, type: string, outcome: UniqueAddOutcome): void {
  const api = otelApi();
  if (api === null) return;
  const provider = api.metrics.getMeterProvider();
  if (provider !== seenProvider) {
    seenProvider = provider;
    const meter = provider.getMeter(INSTRUMENTATION_SCOPE);
    counter =
      meter === api.createNoopMeter()
        ? null
        : meter.createCounter(UNIQUE_ADDS_METRIC.name, { unit: UNIQUE_ADDS_METRIC.unit, description: UNIQUE_ADDS_METRIC.description });
  }
  counter?.add(1, uniqueAddAttributes(system, queue, type, outcome));
}
