/**
 * `Idempotency-Key` records of the BullMQ gateway: one hash per key,
 * `<prefix>:ojs-gateway:idempotency:<scope>:<key digest>`, expiring after the retention (Redis
 * drops it: nothing to sweep). Every gateway process on the prefix reads and writes the same
 * hashes. Each operation is one script (adapters/bullmq/lua/gateway-idempotency-*.lua), so a
 * claim and its takeover are atomic, and the lease is Redis's clock, not the processes'.
 */
import type { Redis } from 'ioredis';
import { luaScripts } from '../adapters/bullmq/generated/lua.js';
import type { IdempotencyClaim, IdempotencyClaimResult, IdempotencyRecordKey, IdempotencyRecords, StoredAnswer } from './gateway-store.js';

const COMMANDS = {
  claim: ['ojsGatewayIdempotencyClaim', luaScripts['gateway-idempotency-claim']],
  finish: ['ojsGatewayIdempotencyFinish', luaScripts['gateway-idempotency-finish']],
  abandon: ['ojsGatewayIdempotencyAbandon', luaScripts['gateway-idempotency-abandon']],
} as const;

type ScriptCall = (...args: (string | number)[]) => Promise<unknown>;

export function createBullmqIdempotencyRecords(redis: Redis, prefix: string): IdempotencyRecords {
  for (const [name, script] of Object.values(COMMANDS)) {
    if (!(name in redis)) redis.defineCommand(name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
  }
  const call = (command: keyof typeof COMMANDS, ...args: (string | number)[]) =>
    (redis as unknown as Record<string, ScriptCall>)[COMMANDS[command][0]]!.call(redis, ...args);
  const keyOf = ({ scope, keyHash }: IdempotencyRecordKey) => `${prefix}:ojs-gateway:idempotency:${scope}:${keyHash}`;
  return {
    async claim(claim: IdempotencyClaim): Promise<IdempotencyClaimResult> {
      const reply = (await call(
        'claim',
        keyOf(claim),
        claim.fingerprint,
        claim.owner,
        JSON.stringify(claim.ids),
        claim.leaseMs,
        claim.retentionMs,
      )) as string[];
      switch (reply[0]) {
        case 'claimed':
          return { outcome: 'claimed', ids: JSON.parse(reply[1]!) as string[], resumed: reply[2] === '1' };
        case 'mismatch':
          return { outcome: 'mismatch' };
        case 'in_progress':
          return { outcome: 'in_progress', retryAfterMs: Number(reply[1]) };
        case 'done': {
          const answer: StoredAnswer = { status: Number(reply[1]), body: reply[2]! };
          if (reply[3]) answer.location = reply[3];
          return { outcome: 'done', answer };
        }
      }
      throw new Error(`unexpected reply of the idempotency claim script: ${String(reply[0]).slice(0, 40)}`);
    },
    async finish(key, owner, answer, retentionMs) {
      return Number(await call('finish', keyOf(key), owner, answer.status, answer.body, answer.location ?? '', retentionMs)) === 1;
    },
    async abandon(key, owner) {
      await call('abandon', keyOf(key), owner);
    },
  };
}
