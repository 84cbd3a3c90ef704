/**
 * ojs-unique/translate: other job systems' uniqueness options as OJS policies, one translator
 * per system, each taking that system's own option names, units and defaults. The result goes
 * in a job's `unique`; options no policy can express throw `UntranslatableOptionError` naming
 * them. docs/expressiveness.md is the reference: every option, what it becomes, and where the
 * behaviour differs.
 */
export { fromOban } from './from-oban.js';
export type { ObanField, ObanReplaceField, ObanState, ObanTimeUnit, ObanUniqueOptions } from './from-oban.js';
export { fromObanPro } from './from-oban-pro.js';
export type { ObanProUniqueOptions } from './from-oban-pro.js';
export { fromZizq, zizqUniqueKey } from './from-zizq.js';
export type { ZizqPayloadKey, ZizqUniqueOptions } from './from-zizq.js';
export { fromFaktory } from './from-faktory.js';
export type { FaktoryUniqueCustom } from './from-faktory.js';
export { fromBullMQ } from './from-bullmq.js';
export type { BullMQDeduplicationOptions, BullMQUniqueOptions } from './from-bullmq.js';
export { fromGraphileWorker } from './from-graphile-worker.js';
export type { GraphileWorkerJobKeyOptions } from './from-graphile-worker.js';
export { UntranslatableOptionError, isUntranslatableOptionError } from '../errors.js';
