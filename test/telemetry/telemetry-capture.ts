/**
 * OpenTelemetry for a test file, all in memory: a meter provider whose reader the test collects
 * from, a tracer provider with an in-memory span exporter, the W3C propagator and an async
 * context manager, registered globally for the file (and removed after it). Each test starts
 * with a fresh meter provider, so the counts a test reads are its own.
 */
import { expect } from 'chai';
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AggregationTemporality, MeterProvider, MetricReader, type DataPoint } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { UNIQUE_ADDS_METRIC } from '../../src/unique-add-telemetry.js';

/** A reader the test collects from when it asks (no timer). */
class CollectingReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/** One `ojs.unique.adds` data point: its attributes and count. */
export interface AddCount {
  attributes: Record<string, unknown>;
  value: number;
}

export interface TelemetryCapture {
  /** Every `ojs.unique.adds` data point so far in this test (cumulative), sorted by attributes. */
  adds(): Promise<AddCount[]>;
  /** The count of the data point with exactly these outcome, type, queue and system (0 when none). */
  count(outcome: string, type: string, queue: string, system: string): Promise<number>;
  /** The finished spans of this test. */
  spans(): ReadableSpan[];
  /** §12: no attribute value of any span or data point contains any of `secrets`. */
  expectNoSecrets(secrets: readonly string[]): Promise<void>;
  /** Registers no meter provider for the rest of the test (nothing may be counted). */
  withoutMeterProvider(): void;
  /** Registers a fresh meter provider (a test that had none). */
  withMeterProvider(): void;
  /** Registers the tracer provider again (after a test's `trace.disable()`). */
  withTracerProvider(): void;
}

export function useTelemetryCapture(): TelemetryCapture {
  const exporter = new InMemorySpanExporter();
  const contextManager = new AsyncLocalStorageContextManager();
  let reader = new CollectingReader();
  const freshMeterProvider = () => {
    metrics.disable();
    reader = new CollectingReader();
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
  };

  const tracerProvider = () => {
    trace.disable();
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  };

  before(() => {
    context.setGlobalContextManager(contextManager.enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    tracerProvider();
  });
  after(() => {
    metrics.disable();
    trace.disable();
    propagation.disable();
    context.disable();
  });
  beforeEach(() => {
    exporter.reset();
    freshMeterProvider();
  });

  const adds = async (): Promise<AddCount[]> => {
    const { resourceMetrics } = await reader.collect();
    const points: AddCount[] = [];
    for (const scope of resourceMetrics.scopeMetrics) {
      for (const metric of scope.metrics) {
        if (metric.descriptor.name !== UNIQUE_ADDS_METRIC.name) continue;
        expect(metric.descriptor.unit).to.equal(UNIQUE_ADDS_METRIC.unit);
        for (const point of metric.dataPoints as DataPoint<number>[])
          points.push({ attributes: { ...point.attributes }, value: point.value });
      }
    }
    return points.sort((a, b) => JSON.stringify(a.attributes).localeCompare(JSON.stringify(b.attributes)));
  };

  return {
    adds,
    async count(outcome, type, queue, system) {
      const point = (await adds()).find(
        ({ attributes: a }) =>
          a['ojs.unique.outcome'] === outcome &&
          a['ojs.job.type'] === type &&
          a['messaging.destination.name'] === queue &&
          a['messaging.system'] === system,
      );
      return point?.value ?? 0;
    },
    spans: () => exporter.getFinishedSpans(),
    async expectNoSecrets(secrets) {
      const text = JSON.stringify({
        spans: exporter.getFinishedSpans().map((span) => ({ name: span.name, attributes: span.attributes, events: span.events })),
        adds: await adds(),
      });
      for (const secret of secrets) expect(text, `telemetry contains ${secret}`).to.not.contain(secret);
    },
    withoutMeterProvider: () => metrics.disable(),
    withMeterProvider: freshMeterProvider,
    withTracerProvider: tracerProvider,
  };
}
