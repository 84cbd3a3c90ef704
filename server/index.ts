/**
 * `ojs-unique/server`: the OJS HTTP gateway (`ojs-unique serve`) as a library. It needs `fastify`
 * (an optional peer of this package: `npm install fastify`), and a backend's host client for that backend.
 *
 *   const app = await createOjsServer({ store: await createGatewayStore({ backend: 'bullmq', redisUrl }) });
 *   await app.listen({ host: '127.0.0.1', port: 8080 });
 */
export { createOjsServer, OJS_CONTENT_TYPE } from './ojs-server.js';
export type { OjsServerOptions } from './ojs-server.js';
export { createGatewayStore, GatewayOptionError } from './create-gateway-store.js';
export { GatewayDependencyError } from './gateway-dependency.js';
export type { GatewayBackendName, GatewayStoreOptions } from './create-gateway-store.js';
export type {
  FetchRequest,
  GatewayEnqueueResult,
  GatewayExtras,
  GatewayJob,
  GatewayJobInput,
  GatewayStore,
  JobError,
  RetryPolicy,
  StoreHealth,
} from './gateway-store.js';
