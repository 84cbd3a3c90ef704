/**
 * The OpenTelemetry API (`@opentelemetry/api`), an optional peer: loaded on first use, and when
 * it is not installed every report is skipped. Loaded with `require`, which the ESM build can
 * call synchronously on the first add, so no add waits for a module; the API keeps its providers
 * on a global, so this copy sees what the application registered through its own import.
 */
import { createRequire } from 'node:module';

export type OtelApi = typeof import('@opentelemetry/api');

let loaded: OtelApi | null | undefined;

/** The API, or null when the package is not installed. */
export function otelApi(): OtelApi | null {
  if (loaded === undefined) {
    const require = createRequire(import.meta.url);
    try {
      loaded = require('@opentelemetry/api') as OtelApi;
    } catch {
      loaded = null;
    }
  }
  return loaded;
}
