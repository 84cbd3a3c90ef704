// The README's quick start, verbatim (test/readme.test.ts keeps them equal).
import { isDuplicateJobError } from 'ojs-unique';
import { createMemoryBackend } from 'ojs-unique/memory';

const backend = createMemoryBackend(); // or the BullMQ / Graphile Worker backends

const unique = { keys: ['type', 'args'], args_keys: ['user_id'], period: 'PT1H', on_conflict: 'ignore' } as const;

const first = await backend.enqueue({ type: 'email.send', args: { user_id: 42, template: 'welcome' }, unique });
const again = await backend.enqueue({ type: 'email.send', args: { user_id: 42, template: 'reminder' }, unique });
console.log(first.outcome, again.outcome, again.job.id === first.job.id); // created deduplicated true

try {
  await backend.enqueue({ type: 'email.send', args: { user_id: 42 }, unique: { ...unique, on_conflict: 'reject' } });
} catch (error) {
  if (isDuplicateJobError(error)) console.log(error.existingJobId, error.existingJobState); // <id> available
}
