/**
 * Faults on Graphile Worker: unique adds through `createGraphileWorkerBackend` and
 * `makeUniqueWorkerUtils().addJob` while the connection is cut right after PostgreSQL replied
 * to a COMMIT or to the one-statement insert (the reply is lost, the write is not), and while
 * an admin connection runs `pg_terminate_backend` on the pool's connections.
 *
 * After every round: no key has two live jobs; every caller got the outcome the database shows
 * (created/replaced: its job committed; deduplicated/reject: it named another call's job and
 * wrote nothing) or an error whose `written` is true (`false`: nothing of that call exists;
 * `'unknown'`: allowed either way, counted); no ledger row without its Graphile job and no
 * Graphile job without its ledger row. Counts are printed.
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import pg from 'pg';
import { isBackendError, isDuplicateJobError, type EnqueueResult, type UniquePolicyInput } from '../../src/index.js';
import {
  createGraphileWorkerBackend,
  makeUniqueWorkerUtils,
  type GraphileWorkerBackend,
  type UniqueWorkerUtils,
} from '../../adapters/graphile-worker/index.js';
import { databaseUrl, quietLogger } from '../conformance/subjects/graphile-worker.js';
import { dropSchemas, makePool, schemasFor, type TestSchemas } from '../adapters/graphile-worker-fixture.js';
import { RUN_SALT } from '../run-salt.js';
import { seededRandom } from '../seeded-random.js';
import { contains, startTcpProxy, type TcpProxy } from './tcp-proxy.js';

const FILE = fileURLToPath(import.meta.url);
const ROUNDS = Number(process.env.FAULT_ROUNDS ?? 90);
const ADDS_PER_ROUND = 12;
const KEYS = 4;

type Fault = 'commit-reply' | 'insert-reply' | 'terminate';
const FAULTS: readonly Fault[] = ['commit-reply', 'insert-reply', 'terminate'];

interface Call {
  n: number;
  key: number;
  settled: { ok: true; result: EnqueueResult } | { ok: false; error: unknown };
}

describe('faults: Graphile Worker unique adds under lost replies and terminated backends', function () {
  this.timeout(120_000);
  let schemas: TestSchemas;
  let admin: pg.Pool;
  let proxy: TcpProxy;
  let pool: pg.Pool;
  let backend: GraphileWorkerBackend;
  let utils: UniqueWorkerUtils;
  const applicationName = `ojsfault_${RUN_SALT}`;

  before(async () => {
    schemas = schemasFor(FILE, 'faults');
    admin = makePool(3);
    await dropSchemas(admin, schemas);
    const target = new URL(databaseUrl());
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const viaProxy = new URL(target.href);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    viaProxy.searchParams.set('application_name', applicationName);
    pool = new pg.Pool({ connectionString: viaProxy.href, max: 5, connectionTimeoutMillis: 5_000 });
    // Cut connections are expected here: nothing to report, pg drops the broken client.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
    const { graphileSchema, uniqueSchema } = schemas;
    utils = await makeUniqueWorkerUtils({ pgPool: pool, schema: graphileSchema, uniqueSchema, logger: quietLogger });
    backend = createGraphileWorkerBackend({ pgPool: pool, uniqueSchema, workerSchema: graphileSchema });
    await backend.ready();
  });

  after(async function () {
    await backend?.close();
    await utils?.release();
    await pool?.end();
    await proxy?.close();
    if (this.currentTest?.state !== 'failed') await dropSchemas(admin, schemas);
    else console.error(`      kept schemas ${schemas.graphileSchema} and ${schemas.uniqueSchema} for inspection`);
    await admin?.end();
  });

  /**
   * A backend of its own, on a pool of `max` connections through a proxy of its own (the faults a
   * test arms there reach no other client), on the file's schemas.
   */
  const isolatedBackend = async (max: number, connectionTimeoutMillis: number) => {
    const target = new URL(databaseUrl());
    const own = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const url = new URL(target.href);
    url.host = `127.0.0.1:${own.port}`;
    const lonely = new pg.Pool({ connectionString: url.href, max, connectionTimeoutMillis });
    lonely.on('error', () => undefined);
    lonely.on('connect', (client) => client.on('error', () => undefined));
    const isolated = createGraphileWorkerBackend({
      pgPool: lonely,
      uniqueSchema: schemas.uniqueSchema,
      workerSchema: schemas.graphileSchema,
      migrate: false,
    });
    const close = async () => {
      await isolated.close();
      await lonely.end().catch(() => undefined);
      await own.close().catch(() => undefined);
    };
    return { own, isolated, close };
  };

  const q = async <R extends Record<string, unknown>>(sql: string, values: unknown[] = []) => {
    const text = sql.replaceAll(':gw', `"${schemas.graphileSchema}"`).replaceAll(':ou', `"${schemas.uniqueSchema}"`);
    return (await admin.query<R>(text, values)).rows;
  };

  it('§8.1 no duplicate, no wrong outcome, no orphan after lost COMMIT/insert replies and pg_terminate_backend', async () => {
    const random = seededRandom(Number.parseInt(RUN_SALT, 16) || 9);
    const strategies = ['reject', 'ignore', 'replace'] as const;
    const calls: Call[] = [];
    let faultsArmed = 0;
    let faultsFired = 0;
    let n = 0;
    for (let round = 0; round < ROUNDS; round += 1) {
      const fault = FAULTS[round % FAULTS.length]!;
      let fired: Promise<void> | null = null;
      if (fault === 'commit-reply') fired = proxy.armDrop({ request: contains('commit'), reply: contains('COMMIT') });
      if (fault === 'insert-reply') fired = proxy.armDrop({ request: contains('try-enqueue'), reply: contains('inserted') });
      faultsArmed += 1;
      // Each round uses fresh keys, so an insert (try-enqueue) and replaces (COMMIT) both happen.
      const pending = Array.from({ length: ADDS_PER_ROUND }, async (_, i) => {
        const call: Call = { n: (n += 1), key: round * KEYS + (i % KEYS), settled: { ok: false, error: null } };
        calls.push(call);
        const strategy = i < KEYS ? 'replace' : strategies[random(strategies.length)]!;
        const unique: UniquePolicyInput = { keys: ['type', 'args'], on_conflict: strategy };
        try {
          const result =
            i % 2 === 0
              ? await backend.enqueue({ type: 'fault', args: { key: call.key }, meta: { call: call.n }, unique })
              : await utils.addJob('fault', { key: call.key }, { meta: { call: call.n }, unique });
          call.settled = { ok: true, result };
        } catch (error) {
          call.settled = { ok: false, error };
        }
      });
      if (fault === 'terminate') {
        await new Promise((resolve) => setTimeout(resolve, random(4)));
        const killed = await q<{ pid: number }>(
          // Materialised first: in one WHERE the planner may call pg_terminate_backend before the
          // application_name filter, i.e. on other sessions of the database.
          `with ours as materialized (select pid from pg_stat_activity where application_name = $1 and pid <> pg_backend_pid())
           select pid from ours where pg_terminate_backend(pid)`,
          [applicationName],
        );
        if (killed.length > 0) faultsFired += 1;
      }
      await Promise.all(pending);
      // A rule that found nothing to drop this round stays armed and fires in a later one.
      void fired?.then(() => {
        faultsFired += 1;
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 20));

    // What the database shows.
    const ledger = await q<{
      ojs_id: string;
      call: number;
      fingerprint: string;
      terminal_state: string | null;
      present: boolean;
      replaced_by: string | null;
    }>(
      `select l.ojs_id, (l.meta->>'call')::int as call, l.fingerprint, l.terminal_state, j.id is not null as present, l.replaced_by
         from :ou.jobs l left join :gw._private_jobs j on j.id = l.job_id`,
    );
    const byCall = new Map<number, (typeof ledger)[number][]>();
    for (const row of ledger) byCall.set(row.call, [...(byCall.get(row.call) ?? []), row]);
    const callOfJob = new Map(ledger.map((row) => [row.ojs_id, row.call]));

    const live = new Map<string, number>();
    for (const row of ledger)
      if (row.terminal_state === null && row.present) live.set(row.fingerprint, (live.get(row.fingerprint) ?? 0) + 1);
    const duplicates = [...live.values()].filter((count) => count > 1).length;
    const orphanLedger = ledger.filter((row) => row.terminal_state === null && !row.present).length;
    const orphanGraphile = (
      await q<{ n: number }>(
        `select count(*)::int as n from :gw._private_jobs j where not exists (select 1 from :ou.jobs l where l.job_id = j.id)`,
      )
    )[0]!.n;

    const wrong: string[] = [];
    const tally = {
      created: 0,
      replaced: 0,
      deduplicated: 0,
      updated: 0,
      rejected: 0,
      writtenFalse: 0,
      writtenUnknown: 0,
      unknownCommitted: 0,
    };
    for (const call of calls) {
      const rows = byCall.get(call.n) ?? [];
      const { settled } = call;
      if (settled.ok) {
        const { result } = settled;
        tally[result.outcome === 'deduplicated' ? 'deduplicated' : result.outcome] += 1;
        if (result.outcome === 'deduplicated') {
          if (rows.length !== 0) wrong.push(`call ${call.n}: deduplicated but its job was written`);
          if (callOfJob.get(result.job.id) === call.n || !callOfJob.has(result.job.id))
            wrong.push(`call ${call.n}: deduplicated against ${result.job.id}, not another call's job`);
        } else {
          if (rows.length !== 1 || rows[0]!.ojs_id !== result.job.id)
            wrong.push(
              `call ${call.n}: ${result.outcome} ${result.job.id} but the ledger shows ${rows.map((r) => r.ojs_id).join(',') || 'nothing'}`,
            );
          if (result.outcome === 'replaced') {
            for (const replaced of [result.replaced, ...(result.also_replaced ?? [])]) {
              const row = ledger.find((r) => r.ojs_id === replaced.id);
              if (row?.terminal_state !== 'cancelled') wrong.push(`call ${call.n}: replaced ${replaced.id}, which is not cancelled`);
              if (callOfJob.get(replaced.id) === call.n) wrong.push(`call ${call.n}: replaced its own job`);
            }
          }
        }
      } else if (isDuplicateJobError(settled.error)) {
        tally.rejected += 1;
        if (rows.length !== 0) wrong.push(`call ${call.n}: rejected but its job was written`);
        if (callOfJob.get(settled.error.existingJobId) === call.n) wrong.push(`call ${call.n}: rejected naming its own job`);
      } else if (isBackendError(settled.error) && settled.error.written === false) {
        tally.writtenFalse += 1;
        if (rows.length !== 0) wrong.push(`call ${call.n}: written false, but its job ${rows[0]!.ojs_id} committed`);
      } else if (isBackendError(settled.error) && settled.error.written === 'unknown') {
        tally.writtenUnknown += 1;
        if (rows.length > 0) tally.unknownCommitted += 1;
      } else {
        wrong.push(`call ${call.n}: unexpected ${String(settled.error)}`);
      }
    }

    console.log(
      `      graphile faults: ${calls.length} adds, ${faultsFired}/${faultsArmed} faults fired, ${wrong.length} wrong outcomes, ${duplicates} keys with two live jobs, ` +
        `${orphanLedger + orphanGraphile} orphans; ${JSON.stringify(tally)}`,
    );
    expect(wrong, wrong.slice(0, 5).join('\n')).to.deep.equal([]);
    expect(duplicates, 'keys with two live jobs').to.equal(0);
    expect(orphanLedger, 'live ledger rows without a Graphile job').to.equal(0);
    expect(orphanGraphile, 'Graphile jobs without a ledger row').to.equal(0);
    expect(faultsFired, 'faults that fired').to.be.greaterThan(ROUNDS / 2);
  });

  it('§8.1 a lost COMMIT reply answers with the committed outcome (same id), on the backend, utils.addJob and addJobs', async () => {
    const unique = { keys: ['type', 'args'] as ('type' | 'args')[], on_conflict: 'replace' as const };
    const first = await backend.enqueue({ type: 'lost', args: { k: 1 }, unique });
    let dropped = proxy.armDrop({ request: contains('commit'), reply: contains('COMMIT') });
    const viaBackend = await backend.enqueue({ type: 'lost', args: { k: 1 }, unique });
    await dropped;
    expect(viaBackend.outcome).to.equal('replaced');
    if (viaBackend.outcome !== 'replaced') return;
    expect(viaBackend.replaced.id).to.equal(first.job.id);
    expect((await backend.getJob(viaBackend.job.id))?.state).to.equal('available');
    dropped = proxy.armDrop({ request: contains('commit'), reply: contains('COMMIT') });
    const viaUtils = await utils.addJob('lost', { k: 1 }, { unique });
    await dropped;
    expect(viaUtils).to.deep.include({ outcome: 'replaced' });
    expect((await backend.getJob(viaUtils.job.id))?.state).to.equal('available');
    dropped = proxy.armDrop({ request: contains('commit'), reply: contains('COMMIT') });
    const batch = await utils.addJobs([
      { identifier: 'lost', payload: { k: 2 }, unique },
      { identifier: 'lost', payload: { k: 1 }, unique },
    ]);
    await dropped;
    expect(batch.map((r) => r.outcome)).to.deep.equal(['created', 'replaced']);
    for (const result of batch) expect((await backend.getJob(result.job.id))?.state).to.equal('available');
    const live = await q<{ n: number }>(`select count(*)::int as n from :ou.jobs where type = 'lost' and terminal_state is null`);
    expect(live[0]!.n).to.equal(2);
  });

  it('x_successor: a lost COMMIT reply of a kept successor answers its outcome, on the backend and addJobs, also when a later add replaced it before the check; a COMMIT that never arrived is written: false', async () => {
    const unique: UniquePolicyInput = {
      keys: ['type'],
      states: ['available', 'scheduled', 'active', 'retryable'],
      on_conflict: 'ignore',
      x_successor: 'latest',
    };
    const holder = await backend.enqueue({ type: 'lost-successor', args: [0], unique });
    // The holder runs: its Graphile row locked as a worker's fetch leaves it.
    await q(
      `update :gw._private_jobs j set locked_at = now(), locked_by = 'fault-test' from :ou.jobs l where l.job_id = j.id and l.ojs_id = $1`,
      [holder.job.id],
    );
    const pending = async () =>
      (
        await q<{ ojs_id: string; payload: unknown }>(`select ojs_id, payload from :ou.successors where fingerprint = $1`, [
          (await backend.explainUnique({ type: 'lost-successor', args: [], unique })).uniqueness_key,
        ])
      )[0];
    let dropped = proxy.armDrop({ request: contains('commit'), reply: contains('COMMIT') });
    const viaBackend = await backend.enqueue({ type: 'lost-successor', args: [1], unique });
    await dropped;
    expect(viaBackend.outcome).to.equal('deduplicated');
    expect(viaBackend.job.id).to.equal(holder.job.id);
    const kept = viaBackend.outcome === 'deduplicated' ? viaBackend.successor?.id : undefined;
    expect(kept, 'the successor kept').to.be.a('string');
    expect((await pending())?.ojs_id).to.equal(kept);

    dropped = proxy.armDrop({ request: contains('commit'), reply: contains('COMMIT') });
    const [viaBatch] = await utils.addJobs([{ identifier: 'lost-successor', payload: [2], unique }]);
    await dropped;
    const batchKept = viaBatch!.outcome === 'deduplicated' ? viaBatch!.successor?.id : undefined;
    expect(batchKept, 'the successor kept by the batch').to.be.a('string');
    expect(await pending()).to.deep.equal({ ojs_id: batchKept, payload: [2] });

    // A second add replaces the successor between the lost reply and its check: the check goes by
    // the transaction, not by the row, so the add still answers its outcome.
    const { own, isolated, close } = await isolatedBackend(2, 5_000);
    try {
      await isolated.ready();
      dropped = own.armDrop({ request: contains('commit'), reply: contains('COMMIT') });
      // The check's connection is a new one: held until the other add has replaced the successor.
      let release: (() => void) | undefined;
      void dropped.then(async () => {
        release = own.holdNewConnections();
        await backend.enqueue({ type: 'lost-successor', args: [4], unique });
        release();
      });
      const replaced = await isolated.enqueue({ type: 'lost-successor', args: [3], unique });
      expect(release, 'the reply was dropped').to.be.a('function');
      expect(replaced.outcome === 'deduplicated' && replaced.successor?.id, 'its successor').to.be.a('string');
      const later = await pending();
      expect(later?.payload, 'the later add holds the successor').to.deep.equal([4]);
      expect(later?.ojs_id).to.not.equal(replaced.outcome === 'deduplicated' && replaced.successor?.id);

      // The COMMIT never reaches the server: the transaction rolls back, and the add says so.
      dropped = own.armDrop({ request: contains('commit'), beforeRequest: true });
      const error = await isolated.enqueue({ type: 'lost-successor', args: [5], unique }).then(
        () => expect.fail('expected a BackendError'),
        (e: unknown) => e,
      );
      await dropped;
      expect(isBackendError(error) && error.written, String(error)).to.equal(false);
      expect((await pending())?.payload, 'the rolled back add kept nothing').to.deep.equal([4]);
    } finally {
      await close();
    }
    await q(`update :gw._private_jobs j set locked_at = null, locked_by = null from :ou.jobs l where l.job_id = j.id and l.ojs_id = $1`, [
      holder.job.id,
    ]);
  });

  it('§8.1 a lost reply to the one-statement insert answers created with the committed job (same id), once', async () => {
    const unique = { keys: ['type', 'args'] as ('type' | 'args')[], on_conflict: 'reject' as const };
    for (const add of [
      () => backend.enqueue({ type: 'lost-insert', args: { via: 'backend' }, unique }),
      () => utils.addJob('lost-insert', { via: 'utils' }, { unique }),
    ]) {
      const dropped = proxy.armDrop({ request: contains('try-enqueue'), reply: contains('inserted') });
      const result = await add();
      await dropped;
      expect(result.outcome).to.equal('created');
      const rows = await q<{ ojs_id: string }>(`select ojs_id from :ou.jobs where type = 'lost-insert' and meta = '{}' and ojs_id = $1`, [
        result.job.id,
      ]);
      expect(rows, 'the job the caller was told about').to.have.length(1);
    }
    expect(
      (
        await q<{ n: number }>(
          `select count(*)::int as n from :gw._private_jobs j join :ou.jobs l on l.job_id = j.id where l.type = 'lost-insert'`,
        )
      )[0]!.n,
    ).to.equal(2);
  });

  it('§8.1 a lost reply that cannot be checked (the database is unreachable afterwards) is written: unknown, never false', async () => {
    const { own, isolated, close } = await isolatedBackend(1, 2_000);
    try {
      const unique = { keys: ['type', 'args'] as ('type' | 'args')[], on_conflict: 'replace' as const };
      await isolated.enqueue({ type: 'unreachable', args: {}, unique });
      const dropped = own.armDrop({ request: contains('commit'), reply: contains('COMMIT') });
      // The proxy stops accepting as soon as the reply is dropped: the check cannot connect.
      void dropped.then(() => own.close());
      const error = await isolated.enqueue({ type: 'unreachable', args: {}, unique }).then(
        () => expect.fail('expected a BackendError'),
        (e: unknown) => e,
      );
      expect(isBackendError(error) && error.written).to.equal('unknown');
      const rows = await q<{ n: number }>(`select count(*)::int as n from :ou.jobs where type = 'unreachable'`);
      expect(rows[0]!.n, 'the replace did commit').to.equal(2);
    } finally {
      await close();
    }
  });
});
