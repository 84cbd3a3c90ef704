/**
 * The consumer side of a trace context a producer stored on a job (a W3C carrier: `traceparent`,
 * `tracestate`): runs a function with that context active, as read by the application's
 * propagator, so that the spans it opens join the producer's trace. Without the API, a
 * propagator or a stored context, the function runs as it is.
 */
import { otelApi } from './otel-api.js';

export function runInTraceContext<T>(carrier: Readonly<Record<string, string>> | undefined, fn: () => T): T {
  const api = otelApi();
  if (api === null || carrier === undefined) return fn();
  return api.context.with(api.propagation.extract(api.context.active(), carrier), fn);
}
