import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { withUniqueness } from '../adapters/bullmq/index.js';
import { unlinkPrefix } from './bullmq-bench-keys.js';
const redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
const prefix = `ojs-bench:${randomUUID()}`;
const raw = new Queue('bench', { connection: redis, prefix });
const queue = withUniqueness(raw);
async function userCode() { return queue.add('job', { a: 1 }, { unique: { keys: ['type', 'args'] } }); }
await userCode();
try { await userCode(); } catch (e) { console.log((e as Error).stack); }
try { await userCode(); } catch (e) { console.log((e as Error).stack); }
await raw.close(); await unlinkPrefix(redis, prefix); await redis.quit();
