/**
 * `onUniqueAdd` on Graphile Worker: every unique add an entry point settled is reported (created,
 * deduplicated, replaced, updated), from the utils' `addJob`/`addJobs`, task helpers and
 * `addJobWithClient`; plain adds are not, and a hook that throws does not fail the add. Real PostgreSQL.
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { runOnce } from 'graphile-worker';
import type pg from 'pg';
import {
  addJobWithClient,
  makeUniqueJobsPreset,
  makeUniqueWorkerUtils,
  withUniqueHelpers,
  type UniqueAddEvent,
  type UniqueWorkerUtils,
} from '../../adapters/graphile-worker/index.js';
import { quietLogger } from '../conformance/subjects/graphile-worker.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);
const summary = (event: UniqueAddEvent) => ({
  identifier: event.identifier,
  queue: event.queue,
  outcome: event.result.outcome,
  replaced: event.result.outcome === 'replaced' ? event.result.replaced.id : undefined,
});

describe('graphile-worker adapter: onUniqueAdd', function () {
  this.timeout(30_000);
  const schemas = isolatePerTest(FILE);
  let pool: pg.Pool;
  let utils: UniqueWorkerUtils;
  let events: UniqueAddEvent[];

  beforeEach(async () => {
    pool = makePool(4);
    events = [];
    const { graphileSchema, uniqueSchema } = schemas.current();
    utils = await makeUniqueWorkerUtils({
      pgPool: pool,
      schema: graphileSchema,
      uniqueSchema,
      logger: quietLogger,
      onUniqueAdd: (event) => {
        events.push(event);
        throw new Error('a failing hook does not fail the add');
      },
    });
  });
  afterEach(async () => {
    await utils.release();
    await pool.end();
  });

  it('utils: addJob and addJobs report every outcome, deduplicated and replaced included; plain adds are not reported', async () => {
    const first = await utils.addJob('t', {}, { unique: { keys: ['type'], on_conflict: 'ignore' }, queue: 'q' });
    await utils.addJob('t', {}, { unique: { keys: ['type'], on_conflict: 'ignore' }, queue: 'q' });
    await utils.addJob('plain', {});
    await utils.addJobs([
      { identifier: 't', payload: {}, unique: { keys: ['type'], on_conflict: 'replace' } },
      { identifier: 'plain', payload: {} },
    ]);
    expect(events.map(summary)).to.deep.equal([
      { identifier: 't', queue: 'q', outcome: 'created', replaced: undefined },
      { identifier: 't', queue: 'q', outcome: 'deduplicated', replaced: undefined },
      { identifier: 't', queue: 'default', outcome: 'replaced', replaced: first.job.id },
    ]);
  });

  it('withUniqueHelpers and addJobWithClient report their adds too', async () => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    const seen: UniqueAddEvent[] = [];
    const onUniqueAdd = (event: UniqueAddEvent) => void seen.push(event);
    await utils.addJob('parent', {});
    const taskList = withUniqueHelpers(
      {
        parent: async (_payload, helpers) => {
          await helpers.addJob('child', {}, { unique: { keys: ['type'], on_conflict: 'ignore' } });
        },
      },
      { uniqueSchema, workerSchema: graphileSchema, onUniqueAdd },
    );
    const preset = { extends: [makeUniqueJobsPreset({ uniqueSchema })] };
    await runOnce({ pgPool: pool, schema: graphileSchema, taskList, logger: quietLogger, preset });
    const client = await pool.connect();
    try {
      await client.query('begin');
      await addJobWithClient(
        client,
        'child',
        {},
        { unique: { keys: ['type'], on_conflict: 'ignore' } },
        {
          workerSchema: graphileSchema,
          uniqueSchema,
          onUniqueAdd,
        },
      );
      await client.query('commit');
    } finally {
      client.release();
    }
    expect(seen.map(summary)).to.deep.equal([
      { identifier: 'child', queue: 'default', outcome: 'created', replaced: undefined },
      { identifier: 'child', queue: 'default', outcome: 'deduplicated', replaced: undefined },
    ]);
  });
});
