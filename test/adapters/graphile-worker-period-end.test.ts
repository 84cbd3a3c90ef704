/**
 * The SQL twin of the core's period arithmetic (adapters/graphile-worker/sql/functions/period-end.sql)
 * against the core itself (`addPeriod`), on PostgreSQL, through the installed functions:
 * `period_end` on calendar edge dates (31 January + P1M, 29 February + P1Y, month ends), mixed
 * periods (P1M2DT3H) and seeded random instants; `retained_at` (reclaim's retention test) at the
 * last millisecond of each window and at its end; and the ledger's `expires_at` as an enqueue
 * writes it. The core works in UTC; so does the SQL, whatever the session's time zone: the DST
 * edges run under zones that change their clocks, where a plain `timestamptz + interval` would not
 * agree (checked too, so the edges are real ones). As the Lua twin is held to the core for BullMQ
 * (bullmq-lua-decision.test.ts), this covers the calendar periods the conformance suite cannot
 * wait for on a real clock.
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import pg from 'pg';
import { createGraphileWorkerBackend } from '../../adapters/graphile-worker/index.js';
import { escapeIdentifier } from '../../adapters/graphile-worker/graphile-worker-sql.js';
import { addPeriod } from '../../src/internal.js';
import { databaseUrl } from '../conformance/subjects/graphile-worker.js';
import { isolatePerTest } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);

/** mulberry32: a seeded PRNG, so a failure can be reproduced. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PERIODS = [
  'PT2S',
  'PT1H',
  'P1D',
  'P1W',
  'P1M',
  'P1Y',
  'P2Y',
  'P1M1D',
  'P1M2DT3H',
  'P2Y3M',
  'P1Y1M',
  'P1MT12H',
  'P13M',
  'P1W2DT3H4M5.678S',
  'PT0.5S',
];

const EDGES = [
  Date.UTC(2024, 0, 31, 12, 0, 0, 5), // 31 January of a leap year: + P1M = 29 February
  Date.UTC(2023, 0, 31), // of a common year: 28 February
  Date.UTC(2024, 1, 29, 23, 59, 59, 999), // 29 February: + P1Y = 28 February 2025
  Date.UTC(2000, 1, 29, 6), // a leap century
  Date.UTC(2100, 0, 31, 1), // a common century: + P1M = 28 February 2100
  Date.UTC(2024, 2, 31, 0, 0, 0, 1), // 31 March: + P1M = 30 April
  Date.UTC(2024, 7, 31, 18), // 31 August: + P1M = 30 September
  Date.UTC(2023, 11, 31, 23, 59, 59, 999), // the year's last millisecond
  Date.UTC(2024, 3, 30), // a 30-day month's end
  Date.UTC(1970, 0, 1),
];

/** Instants around the clock changes of the zones below (and an hour or a day before them). */
const DST_EDGES = [
  Date.UTC(2024, 2, 10, 7), // New York springs forward (02:00 EST → 03:00 EDT)
  Date.UTC(2024, 10, 3, 6), // New York falls back
  Date.UTC(2024, 2, 31, 1), // Paris springs forward
  Date.UTC(2024, 9, 27, 1), // Paris falls back
  Date.UTC(2024, 3, 6, 15), // Lord Howe falls back half an hour
  Date.UTC(2024, 8, 28, 14), // Chatham springs forward (a 45-minute zone)
].flatMap((at) => [at - 3_600_000, at - 86_400_000, at - 30 * 86_400_000, at]);

const ZONES = ['UTC', 'America/New_York', 'Europe/Paris', 'Australia/Lord_Howe', 'Pacific/Chatham'];

describe('graphile-worker: the SQL period arithmetic is the core’s addPeriod', function () {
  this.timeout(30_000);
  const schemas = isolatePerTest(FILE);
  let pool: pg.Pool;
  beforeEach(() => {
    // Every session in a zone that changes its clocks, unless a test sets another: the adapter's
    // own sessions included (the enqueue test), so SQL that followed the session's zone would show.
    pool = new pg.Pool({ connectionString: databaseUrl(), max: 2, options: '-c timezone=America/New_York' });
  });
  afterEach(async () => {
    await pool.end();
  });

  const ou = () => escapeIdentifier(schemas.current().uniqueSchema);
  const iso = (ms: number) => new Date(ms).toISOString();
  /** epoch ms (with a fraction below the ms, if any) of period_end(start, period), for each start, in one query. */
  const periodEnds = async (client: pg.PoolClient | pg.Pool, starts: number[], period: string): Promise<number[]> => {
    const { rows } = await client.query<{ end: string }>(
      `select (extract(epoch from ${ou()}.period_end(s::timestamptz, $2::interval)) * 1000)::text as end
         from unnest($1::text[]) with ordinality u(s, i) order by i`,
      [starts.map(iso), period],
    );
    return rows.map((row) => Number(row.end));
  };

  it('period_end equals addPeriod on calendar edge dates and 2,000 random instants', async function () {
    const random = prng(11);
    for (const period of PERIODS) {
      const starts = [...EDGES, ...Array.from({ length: 130 }, () => Math.floor(random() * Date.UTC(2200, 0, 1)))];
      expect(await periodEnds(pool, starts, period), period).to.deep.equal(starts.map((start) => addPeriod(start, period)));
    }
    // The named edges, spelled out.
    const at = async (start: number, period: string) => iso((await periodEnds(pool, [start], period))[0]!);
    expect(await at(Date.UTC(2024, 0, 31, 12, 0, 0, 5), 'P1M')).to.equal('2024-02-29T12:00:00.005Z');
    expect(await at(Date.UTC(2023, 0, 31), 'P1M')).to.equal('2023-02-28T00:00:00.000Z');
    expect(await at(Date.UTC(2024, 1, 29, 23, 59, 59, 999), 'P1Y')).to.equal('2025-02-28T23:59:59.999Z');
    expect(await at(Date.UTC(2024, 0, 31), 'P1M1D')).to.equal('2024-03-01T00:00:00.000Z');
    expect(await at(Date.UTC(2024, 0, 31), 'P1M2DT3H')).to.equal('2024-03-02T03:00:00.000Z');
    expect(await at(Date.UTC(2100, 0, 31, 1), 'P1M')).to.equal('2100-02-28T01:00:00.000Z');
  });

  it('below the millisecond, PostgreSQL keeps the microseconds the core rounds away: less than 1 ms apart', async () => {
    const start = Date.UTC(2024, 0, 31);
    const [end] = await periodEnds(pool, [start], 'PT1.0005S');
    expect(end).to.equal(start + 1000.5);
    expect(addPeriod(start, 'PT1.0005S')).to.equal(start + 1001);
    expect(Math.abs(end! - addPeriod(start, 'PT1.0005S'))).to.be.lessThan(1);
  });

  it('DST edges: the same ends under every session time zone, where timestamptz + interval would follow the zone', async () => {
    const client = await pool.connect();
    try {
      for (const zone of ZONES) {
        await client.query(`set timezone = '${zone}'`);
        for (const period of ['P1D', 'PT24H', 'P1W', 'P1M', 'P1Y', 'P1M2DT3H']) {
          expect(await periodEnds(client, DST_EDGES, period), `${period} under ${zone}`).to.deep.equal(
            DST_EDGES.map((start) => addPeriod(start, period)),
          );
        }
      }
      // The edges are real: in New York, a plain timestamptz + '1 day' across the spring-forward is 23 hours.
      await client.query(`set timezone = 'America/New_York'`);
      const before = Date.UTC(2024, 2, 10, 7) - 3_600_000;
      const { rows } = await client.query<{ end: string }>(
        `select (extract(epoch from $1::timestamptz + interval '1 day') * 1000)::text as end`,
        [iso(before)],
      );
      expect(Number(rows[0]!.end)).to.equal(before + 23 * 3_600_000);
      expect(addPeriod(before, 'P1D')).to.equal(before + 24 * 3_600_000);
    } finally {
      await client.query('reset timezone');
      client.release();
    }
  });

  it('retained_at counts a record until the last millisecond of its window and not at its end, from each anchor', async () => {
    const starts = [...EDGES, ...DST_EDGES.slice(0, 8)];
    for (const period of ['P1M', 'P1Y', 'P1M2DT3H', 'P1D', 'PT1H']) {
      for (const anchor of ['', 'scheduled_at ', 'last_duplicate '] as const) {
        const cases = starts.flatMap((start) => {
          const end = addPeriod(start, period);
          // The anchor's own instant is `start`; the record's others lie an hour away, so that
          // measuring from the wrong one moves the end.
          const created = anchor === '' ? start : start - 3_600_000;
          const scheduled = anchor === 'scheduled_at ' ? start : start + 3_600_000;
          const last = anchor === 'last_duplicate ' ? start : null;
          return [
            { created, scheduled, last, at: end - 1, expected: true },
            { created, scheduled, last, at: end, expected: false },
          ];
        });
        const { rows } = await pool.query<{ kept: boolean }>(
          `select ${ou()}.retained_at(jsonb_build_array($1::text), c.created::timestamptz, c.scheduled::timestamptz,
                    c.last::timestamptz, c.at::timestamptz) as kept
             from rows from (jsonb_to_recordset($2::jsonb) as (created text, scheduled text, last text, at text))
                  with ordinality c(created, scheduled, last, at, i) order by i`,
          [
            `${anchor}${period}`,
            JSON.stringify(
              cases.map((c) => ({
                created: iso(c.created),
                scheduled: iso(c.scheduled),
                last: c.last === null ? null : iso(c.last),
                at: iso(c.at),
              })),
            ),
          ],
        );
        expect(
          rows.map((row) => row.kept),
          `"${anchor}${period}"`,
        ).to.deep.equal(cases.map((c) => c.expected));
      }
    }
  });

  it('an enqueue records expires_at = addPeriod(anchor, period): a scheduled_at anchor on 31 January, 29 February and a DST change', async () => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    const backend = createGraphileWorkerBackend({ pgPool: pool, uniqueSchema, workerSchema: graphileSchema, migrate: false });
    try {
      const client = await pool.connect();
      try {
        await client.query(`set timezone = 'America/New_York'`);
        for (const [scheduled, period] of [
          [Date.UTC(2024, 0, 31, 12, 0, 0, 5), 'P1M'],
          [Date.UTC(2024, 1, 29, 8), 'P1Y'],
          [Date.UTC(2024, 0, 31), 'P1M2DT3H'],
          [Date.UTC(2024, 2, 9, 12), 'P1D'],
        ] as const) {
          const { job } = await backend.enqueue({
            type: `period.${period}`,
            args: { scheduled },
            scheduled_at: iso(scheduled),
            unique: { period, x_period_anchor: 'scheduled_at' },
          });
          const { rows } = await client.query<{ expires: string }>(
            `select (extract(epoch from expires_at) * 1000)::text as expires from ${ou()}.jobs where ojs_id = $1`,
            [job.id],
          );
          expect(Number(rows[0]!.expires), `${iso(scheduled)} + ${period}`).to.equal(addPeriod(scheduled, period));
        }
      } finally {
        await client.query('reset timezone');
        client.release();
      }
    } finally {
      await backend.close();
    }
  });
});
