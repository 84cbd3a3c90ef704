/**
 * Type tests of the policy extensions and of ojs-unique/translate's option types. Compiled by
 * `npm run typecheck`, never run. Each `@ts-expect-error` fails the compile if the line below it
 * compiles; the lines without one must compile.
 */
import { createMemoryBackend } from '../../adapters/memory/index.js';
import type { EnqueueResult, UniquePolicyInput, UpdateField } from '../../src/index.js';
import {
  fromBullMQ,
  fromFaktory,
  fromGraphileWorker,
  fromOban,
  fromObanPro,
  fromZizq,
  zizqUniqueKey,
  type ObanUniqueOptions,
} from '../../src/translate/index.js';

export async function extensions(): Promise<void> {
  const backend = createMemoryBackend();
  const job = { type: 'email.send', args: { user_id: 1 } };
  await backend.enqueue({ ...job, unique: { period: 60, x_period_anchor: 'scheduled_at' } });
  await backend.enqueue({ ...job, unique: { x_key: 'welcome:1', keys: ['queue'] } });
  await backend.enqueue({ ...job, unique: { x_update: { scheduled: ['args', 'priority'], retryable: ['scheduled_at'] } } });
  const asConst = { x_update: { scheduled: ['args'] } } as const satisfies UniquePolicyInput;
  await backend.enqueue({ ...job, unique: asConst });
  // @ts-expect-error misspelt anchor
  await backend.enqueue({ ...job, unique: { period: 60, x_period_anchor: 'scheduled' } });
  // @ts-expect-error misspelt extension
  await backend.enqueue({ ...job, unique: { x_keys: 'k' } });
  // @ts-expect-error a caller key is a string
  await backend.enqueue({ ...job, unique: { x_key: 42 } });
  // @ts-expect-error a terminal state cannot be updated in place
  await backend.enqueue({ ...job, unique: { x_update: { completed: ['args'] } } });
  // @ts-expect-error queue is not a field x_update may change
  await backend.enqueue({ ...job, unique: { x_update: { scheduled: ['queue'] } } });

  const result: EnqueueResult = await backend.enqueue(job);
  if (result.outcome === 'updated') {
    const changed: UpdateField[] = result.changed;
    void changed;
  }
  // @ts-expect-error only an updated outcome has `changed`
  void result.changed;
}

export function translators(): void {
  const oban: ObanUniqueOptions = { period: [2, 'minutes'], fields: ['worker', 'args'], keys: ['url'], timestamp: 'scheduled_at' };
  fromOban(oban);
  fromOban(true);
  fromOban({ period: 'infinity', states: ['available', 'executing'], replace: { scheduled: ['args', 'priority'] } });
  // @ts-expect-error misspelt option
  fromOban({ perod: 60 });
  // @ts-expect-error Oban's unit is minutes, not min
  fromOban({ period: [2, 'min'] });
  // @ts-expect-error an Oban state, not an OJS one
  fromOban({ states: ['active'] });
  // @ts-expect-error not an Oban field
  fromOban({ fields: ['type'] });
  // @ts-expect-error not a field Oban can replace
  fromOban({ replace: { scheduled: ['state'] } });

  fromObanPro({ period: 300, group: 'successful' });
  // @ts-expect-error misspelt group
  fromObanPro({ group: 'completed' });

  fromZizq({ uniqueKey: 'send_email:welcome:42', uniqueWhile: 'active' });
  fromZizq({ uniqueKey: zizqUniqueKey('userId') });
  // @ts-expect-error uniqueKey is required
  fromZizq({ uniqueWhile: 'queued' });
  // @ts-expect-error misspelt scope
  fromZizq({ uniqueKey: 'k', uniqueWhile: 'running' });

  fromFaktory({ unique_for: 600.0, unique_until: 'start', other_custom: true });
  fromFaktory({ unique_for: null });
  // @ts-expect-error misspelt unique_until value
  fromFaktory({ unique_for: 600, unique_until: 'finish' });
  // @ts-expect-error unique_for is seconds, a number
  fromFaktory({ unique_for: '600' });

  fromBullMQ({ jobId: 'order-1' });
  fromBullMQ({ deduplication: { id: 'paint', ttl: 5000, extend: true, replace: true } });
  // @ts-expect-error misspelt option
  fromBullMQ({ jobid: 'order-1' });
  // @ts-expect-error deduplication needs an id
  fromBullMQ({ deduplication: { ttl: 5000 } });
  // @ts-expect-error misspelt deduplication option
  fromBullMQ({ deduplication: { id: 'a', tll: 5000 } });

  fromGraphileWorker({ jobKey: 'abc', jobKeyMode: 'preserve_run_at' });
  // @ts-expect-error misspelt mode
  fromGraphileWorker({ jobKey: 'abc', jobKeyMode: 'preserve' });
  // @ts-expect-error misspelt option
  fromGraphileWorker({ job_key: 'abc' });
}
