/**
 * The reservations of the jobs HTTP workers fetched on the BullMQ gateway (job-reservation.ts):
 * one sorted set per prefix, `<prefix>:ojs-gateway:reservations`, of job ids scored by when each
 * reservation lapses (ms on Redis's clock), shared by every gateway process over the prefix. A
 * fetch or heartbeat sets a job's score, its ack or nack removes it, and `takeLapsed`
 * (adapters/bullmq/lua/gateway-lapsed-reservations-1.lua) hands each lapsed one to exactly one
 * process, which fails the job back.
 */
import type { Redis } from 'ioredis';
import { luaScripts } from '../adapters/bullmq/generated/lua.js';

const TAKE = 'ojsGatewayLapsedReservations';

export interface BullmqJobReservations {
  /** Reserves job `id` until `untilMs` (Redis's clock), replacing its reservation. */
  set(id: string, untilMs: number): Promise<void>;
  /** Ends job `id`'s reservation. */
  clear(id: string): Promise<void>;
  /** Takes up to `limit` lapsed reservations (each once, across processes), with Redis's clock. */
  takeLapsed(limit: number): Promise<{ nowMs: number; ids: string[] }>;
}

export function createBullmqJobReservations(redis: Redis, prefix: string): BullmqJobReservations {
  const script = luaScripts['gateway-lapsed-reservations'];
  if (!(TAKE in redis)) redis.defineCommand(TAKE, { numberOfKeys: script.numberOfKeys, lua: script.lua });
  const key = `${prefix}:ojs-gateway:reservations`;
  return {
    async set(id, untilMs) {
      await redis.zadd(key, untilMs, id);
    },
    async clear(id) {
      await redis.zrem(key, id);
    },
    async takeLapsed(limit) {
      const call = (redis as unknown as Record<string, (...args: (string | number)[]) => Promise<string[]>>)[TAKE]!;
      const [now, ...ids] = await call.call(redis, key, limit);
      return { nowMs: Number(now), ids };
    },
  };
}
