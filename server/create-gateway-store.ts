/**
 * The store for `--backend`: memory is loaded at once; BullMQ and Graphile Worker only when
 * chosen, so the memory gateway runs without either host installed (both are optional peers; a
 * missing one is a `GatewayDependencyError` naming what to install).
 */
import { importGatewayDependency } from './gateway-dependency.js';
import type { GatewayStore } from './gateway-store.js';
import { createMemoryGatewayStore } from './memory-gateway-store.js';

/** `createGatewayStore` was given options it cannot start a store with; `option` names the missing or bad one. */
export class GatewayOptionError extends Error {
  readonly code = 'invalid_option' as const;
  constructor(
    readonly option: keyof GatewayStoreOptions,
    message: string,
  ) {
    super(message);
    this.name = 'GatewayOptionError';
  }
}

export type GatewayBackendName = 'memory' | 'bullmq' | 'graphile-worker';

export interface GatewayStoreOptions {
  backend: GatewayBackendName;
  /** BullMQ: the Redis to connect to. (Default: `redis://127.0.0.1:6379`.) */
  redisUrl?: string;
  /** Graphile Worker: the database to connect to. Required for that backend. */
  databaseUrl?: string;
  /**
   * BullMQ: the queues' key prefix (default `bull`, BullMQ's own). Graphile Worker: Graphile
   * Worker's schema (default `graphile_worker`).
   */
  prefix?: string;
  /** Graphile Worker: the adapter's own schema. (Default: `ojs_unique`.) */
  uniqueSchema?: string;
  /**
   * Graphile Worker: send named prepared statements; false behind PgBouncer in transaction mode
   * before 1.21. (Default: true.) The other backends have none.
   */
  preparedStatements?: boolean;
  /** Graphile Worker: the size of the gateway's PostgreSQL pool. (Default: 10.) */
  maxPoolSize?: number;
  /**
   * Count each duplicate PUSH on the job it met: `duplicate_count` and `last_duplicate_at` in the
   * job's JSON (docs/decisions.md, "Duplicate counts"); every backend. (Default: false.)
   */
  countDuplicates?: boolean;
}

export async function createGatewayStore(options: GatewayStoreOptions): Promise<GatewayStore> {
  switch (options.backend) {
    case 'memory':
      return createMemoryGatewayStore({ countDuplicates: options.countDuplicates ?? false });
    case 'bullmq': {
      const { createBullmqGatewayStore } = await importGatewayDependency(
        () => import('./bullmq-gateway-store.js'),
        ['bullmq', 'ioredis'],
        "the gateway's bullmq backend",
      );
      return createBullmqGatewayStore({
        redisUrl: options.redisUrl ?? 'redis://127.0.0.1:6379',
        prefix: options.prefix ?? 'bull',
        countDuplicates: options.countDuplicates ?? false,
      });
    }
    case 'graphile-worker': {
      if (!options.databaseUrl) {
        throw new GatewayOptionError('databaseUrl', 'the graphile-worker backend needs a database URL (--database-url or DATABASE_URL)');
      }
      const { createGraphileWorkerGatewayStore } = await importGatewayDependency(
        () => import('./graphile-worker-gateway-store.js'),
        ['graphile-worker', 'pg'],
        "the gateway's graphile-worker backend",
      );
      return createGraphileWorkerGatewayStore({
        databaseUrl: options.databaseUrl,
        ...(options.prefix ? { graphileSchema: options.prefix } : {}),
        ...(options.uniqueSchema ? { uniqueSchema: options.uniqueSchema } : {}),
        ...(options.preparedStatements === undefined ? {} : { preparedStatements: options.preparedStatements }),
        ...(options.maxPoolSize === undefined ? {} : { maxPoolSize: options.maxPoolSize }),
        countDuplicates: options.countDuplicates ?? false,
      });
    }
  }
}
