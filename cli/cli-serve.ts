/**
 * `ojs-unique serve`: the OJS HTTP gateway (ojs-http-binding) over memory, BullMQ or Graphile
 * Worker. Runs until SIGINT/SIGTERM, then closes the server and the backend's connections.
 *
 *   ojs-unique serve [--backend memory|bullmq|graphile-worker] [--port 8080] [--host 127.0.0.1]
 *                    [--prefix <p>] [--unique-schema <s>] [--redis-url <url>] [--database-url <url>] [--token <t>]
 *                    [--test-reset] [--body-limit <bytes>] [--request-timeout <ms>] [--max-connections <n>]
 *                    [--no-prepared-statements] [--max-pool-size <n>] [--idempotency-retention <s>] [--log-level <level>]
 *                    [--count-duplicates]
 *
 * `REDIS_URL`, `DATABASE_URL` and `OJS_GATEWAY_TOKEN` are read when the flags are absent.
 * Exit codes: 0 after a clean shutdown, 2 for bad usage, 1 when the server cannot start (`fastify`,
 * an optional peer, not installed among the causes: the message says what to install).
 */
import { parseArgs } from 'node:util';
import { createGatewayStore, createOjsServer, type GatewayBackendName } from '../server/index.js';
import { loadFastify } from '../server/gateway-dependency.js';
import { DEFAULT_MAX_CONNECTIONS } from '../server/ojs-server.js';
import { DEFAULT_IDEMPOTENCY_RETENTION_MS } from '../server/idempotency-key.js';

export const SERVE_USAGE = `usage:
  ojs-unique serve [--backend memory|bullmq|graphile-worker] [--port <n>] [--host <addr>]
                   [--prefix <BullMQ key prefix | Graphile schema>] [--unique-schema <adapter schema>]
                   [--redis-url <url>] [--database-url <url>] [--token <t>] [--test-reset]
                   [--body-limit <bytes>] [--request-timeout <ms>] [--max-connections <n>]
                   [--no-prepared-statements] [--max-pool-size <n>] [--idempotency-retention <s>]
                   [--log-level <level>] [--count-duplicates]

  --request-timeout      ms to receive a whole request; a stalled one is answered 408 and closed (30000)
  --max-connections      connections held open at once; one more is closed as it opens (${DEFAULT_MAX_CONNECTIONS})
  --no-prepared-statements  graphile-worker: no named prepared statements (PgBouncer in transaction mode)
  --max-pool-size        graphile-worker: PostgreSQL connections the gateway holds at most (10)
  --idempotency-retention   seconds an Idempotency-Key of PUSH is kept on the backend after its answer (86400)
  --count-duplicates     count each duplicate PUSH on the job it met (duplicate_count, last_duplicate_at in the job's JSON)`;

const BACKENDS: readonly GatewayBackendName[] = ['memory', 'bullmq', 'graphile-worker'];
const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

export async function serve(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(SERVE_USAGE);
    return 0;
  }
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        backend: { type: 'string', default: 'memory' },
        port: { type: 'string', default: '8080' },
        host: { type: 'string', default: '127.0.0.1' },
        prefix: { type: 'string' },
        'unique-schema': { type: 'string' },
        'redis-url': { type: 'string' },
        'database-url': { type: 'string' },
        token: { type: 'string' },
        'test-reset': { type: 'boolean', default: false },
        'body-limit': { type: 'string', default: String(1024 * 1024) },
        'request-timeout': { type: 'string', default: '30000' },
        'max-connections': { type: 'string', default: String(DEFAULT_MAX_CONNECTIONS) },
        'no-prepared-statements': { type: 'boolean', default: false },
        'max-pool-size': { type: 'string', default: '10' },
        'count-duplicates': { type: 'boolean', default: false },
        'idempotency-retention': { type: 'string', default: String(DEFAULT_IDEMPOTENCY_RETENTION_MS / 1000) },
        'log-level': { type: 'string', default: 'info' },
      },
      strict: true,
    }));
  } catch (error) {
    console.error(`ojs-unique serve: ${(error as Error).message}\n${SERVE_USAGE}`);
    return 2;
  }
  const backend = values.backend as GatewayBackendName;
  const port = Number(values.port);
  const bodyLimit = Number(values['body-limit']);
  const requestTimeoutMs = Number(values['request-timeout']);
  const maxConnections = Number(values['max-connections']);
  const idempotencyRetention = Number(values['idempotency-retention']);
  const maxPoolSize = Number(values['max-pool-size']);
  const problems: string[] = [];
  if (!BACKENDS.includes(backend)) problems.push(`--backend must be one of ${BACKENDS.join(', ')}`);
  if (!Number.isInteger(port) || port < 0 || port > 65535) problems.push('--port must be an integer from 0 to 65535');
  if (!Number.isInteger(bodyLimit) || bodyLimit <= 0) problems.push('--body-limit must be a positive integer');
  if (!Number.isInteger(requestTimeoutMs) || requestTimeoutMs <= 0) problems.push('--request-timeout must be a positive integer');
  if (!Number.isInteger(maxConnections) || maxConnections <= 0) problems.push('--max-connections must be a positive integer');
  if (!Number.isInteger(maxPoolSize) || maxPoolSize <= 0) problems.push('--max-pool-size must be a positive integer');
  if (!Number.isInteger(idempotencyRetention) || idempotencyRetention <= 0) {
    problems.push('--idempotency-retention must be a positive integer (seconds)');
  }
  if (problems.length > 0) {
    console.error(`ojs-unique serve: ${problems.join('; ')}\n${SERVE_USAGE}`);
    return 2;
  }
  const token = values.token ?? env.OJS_GATEWAY_TOKEN;
  const host = values.host!;
  if (!LOOPBACK.has(host) && !token) {
    console.error(`ojs-unique serve: warning: listening on ${host} without --token: anyone who can reach it can enqueue and cancel jobs`);
  }
  try {
    // Before the store connects: without Fastify there is nothing to serve, and the message names what to install.
    await loadFastify();
    const store = await createGatewayStore({
      backend,
      redisUrl: values['redis-url'] ?? env.REDIS_URL,
      databaseUrl: values['database-url'] ?? env.DATABASE_URL,
      ...(values.prefix ? { prefix: values.prefix } : {}),
      ...(values['unique-schema'] ? { uniqueSchema: values['unique-schema'] } : {}),
      ...(values['no-prepared-statements'] ? { preparedStatements: false } : {}),
      ...(backend === 'graphile-worker' ? { maxPoolSize } : {}),
      ...(values['count-duplicates'] ? { countDuplicates: true } : {}),
    });
    const app = await createOjsServer({
      store,
      ...(token ? { token } : {}),
      testReset: values['test-reset'],
      bodyLimit,
      requestTimeoutMs,
      maxConnections,
      idempotencyRetentionMs: idempotencyRetention * 1000,
      // Keys and args are logged at debug only; the token and idempotency keys never.
      logger: { level: values['log-level']!, redact: ['req.headers.authorization', 'req.headers["idempotency-key"]'] },
    });
    const address = await app.listen({ host, port });
    app.log.info(`OJS gateway (${backend}) listening on ${address}`);
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    await app.close();
    return 0;
  } catch (error) {
    console.error(`ojs-unique serve: ${(error as Error).message}`);
    return 1;
  }
}
