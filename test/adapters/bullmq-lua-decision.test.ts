/**
 * The Lua twin of the core's decision (adapters/bullmq/lua/includes/ojs-decide-conflict.lua and
 * ojs-period-end.lua) against the core itself (`decideConflict`, `addPeriod`), on Redis, over
 * seeded random inputs and the calendar edge dates. This is what lets the adapter decide inside
 * its one script without the decision drifting from the one every other backend uses — and it
 * covers the calendar-period cases the conformance suite must skip on a real clock.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { luaIncludes } from '../../adapters/bullmq/generated/lua.js';
import { periodArgs } from '../../adapters/bullmq/bullmq-period-args.js';
import { OJS_JOB_STATES, parseUniquePolicy, type OjsJobState } from '../../src/index.js';
import { addPeriod, decideConflict, decideUniqueConflict, parsePeriod, type ConflictCandidate } from '../../src/internal.js';
import { UPDATE_FIELDS, type UpdateField, type UniquePolicyInput } from '../../src/unique-policy.js';

const PROBE = `
local rcall = redis.call
${luaIncludes['ojs-period-end']}
${luaIncludes['ojs-decide-conflict']}
local input = cjson.decode(ARGV[1])
if input.ends then
  local out = {}
  for i, created in ipairs(input.ends) do
    out[i] = string.format("%.0f", ojsPeriodEnd(created, input.period.years, input.period.months, input.period.fixedMs))
  end
  return out
end
local policy = { states = {}, onConflict = input.onConflict }
for _, state in ipairs(input.states) do policy.states[state] = true end
if input.period ~= cjson.null then
  policy.years = input.period.years
  policy.months = input.period.months
  policy.fixedMs = input.period.fixedMs
end
policy.anchor = input.anchor or ""
if input.update ~= nil and input.update ~= cjson.null then policy.update = input.update end
if input.maxWait ~= nil and input.maxWait ~= cjson.null then policy.maxWait = input.maxWait end
if input.successor ~= nil and input.successor ~= cjson.null then policy.successor = input.successor end
for _, c in ipairs(input.candidates) do
  if c.finished == cjson.null then c.finished = nil end
  if c.due == cjson.null then c.due = nil end
  if c.sched == cjson.null then c.sched = nil end
  if c.last == cjson.null then c.last = nil end
end
local action, existing, cancel, scheduledAt, touch, fields, dueLimit = ojsDecideConflict(input.candidates, policy, input.now)
local ids = {}
for i, c in ipairs(cancel or {}) do ids[i] = c.id end
local touched = {}
for i, c in ipairs(touch or {}) do touched[i] = c.id end
return { action, existing and existing.id or "", ids, scheduledAt and string.format("%.0f", scheduledAt) or "", touched,
  fields or {}, dueLimit and string.format("%.0f", dueLimit) or "" }
`;

/** mulberry32: a seeded PRNG, so a failure can be reproduced. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PERIODS = [null, 'PT2S', 'PT1H', 'P1D', 'P1W', 'P1M', 'P1Y', 'P1M1D', 'P2Y3M', 'P1MT12H', 'PT0.5S', 'P13M'];
const EDGES = [
  Date.UTC(2024, 0, 31, 12, 0, 0, 5),
  Date.UTC(2024, 1, 29, 23, 59, 59, 999),
  Date.UTC(2023, 0, 31),
  Date.UTC(2025, 11, 31, 23, 59, 59, 999),
  Date.UTC(2024, 2, 31, 0, 0, 0, 1),
  Date.UTC(2000, 1, 29, 6),
  Date.UTC(2100, 0, 31, 1),
  Date.UTC(1970, 0, 1),
];

describe('bullmq adapter: the Lua decision is the core decision', function () {
  this.timeout(120_000); // a safety net: two runs at once on 2 CPUs take several times longer
  let redis: Redis;
  before(() => {
    redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  });
  after(() => redis.quit());

  it('ojsPeriodEnd equals addPeriod on calendar edge dates and 2,000 random instants', async function () {
    const random = prng(7);
    for (const iso of PERIODS.filter((p): p is string => p !== null)) {
      const period = periodArgs(parseUniquePolicy({ period: iso }))!;
      const starts = [...EDGES, ...Array.from({ length: 170 }, () => Math.floor(random() * Date.UTC(2200, 0, 1)))];
      const ends = (await redis.eval(PROBE, 0, JSON.stringify({ ends: starts, period }))) as string[];
      expect(ends.map(Number), iso).to.deep.equal(starts.map((start) => addPeriod(start, iso)));
    }
  });

  it('equal created_at: the first inserted (seq) is the existing job, whatever the ids say', async function () {
    const now = Date.UTC(2026, 0, 1);
    const policy = parseUniquePolicy({ keys: ['type'], on_conflict: 'replace' });
    const candidates: ConflictCandidate[] = [
      { id: '9', state: 'available', created_at: now - 5, seq: (now - 5) * 1000 + 1 },
      { id: '10', state: 'available', created_at: now - 5, seq: (now - 5) * 1000 + 2 },
    ];
    const expected = decideConflict({ policy, uniquenessKey: 'k', now, candidates, canReplaceActive: false });
    expect(expected).to.deep.include({ action: 'replace' });
    const input = {
      onConflict: policy.on_conflict,
      states: policy.states,
      period: null,
      now,
      candidates: candidates.map((c) => ({ id: c.id, state: c.state, created: c.created_at, seq: c.seq, due: null })),
    };
    const [action, existing, cancel] = (await redis.eval(PROBE, 0, JSON.stringify(input))) as [string, string, string[]];
    expect([action, existing, cancel]).to.deep.equal(['replace', '9', ['9', '10']]);
  });

  it('ojsDecideConflict decides as decideConflict on 3,000 random candidate sets, at and around window edges', async function () {
    const random = prng(42);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const strategies = ['reject', 'ignore', 'replace', 'replace_except_schedule'] as const;
    for (let round = 0; round < 3000; round++) {
      const states = OJS_JOB_STATES.filter(() => random() < 0.5);
      if (states.length === 0) states.push(pick(OJS_JOB_STATES));
      const periodIso = pick(PERIODS);
      const policy = parseUniquePolicy({ states, on_conflict: pick(strategies), ...(periodIso ? { period: periodIso } : {}) });
      const now = random() < 0.3 ? pick(EDGES) + 40 * 86_400_000 : Math.floor(random() * Date.UTC(2100, 0, 1)) + 1e12;
      const span = periodIso ? addPeriod(now, periodIso) - now : 86_400_000;
      const candidates: ConflictCandidate[] = Array.from({ length: Math.floor(random() * 5) }, (_, i) => {
        const state = pick(OJS_JOB_STATES) as OjsJobState;
        // Some candidates sit exactly on the window's edge (created_at + period == now, and 1 ms either side).
        let created = now - Math.floor(random() * span * 1.5);
        if (periodIso && random() < 0.3) {
          let lo = now - 2 * span - 2;
          let hi = now;
          while (hi - lo > 1) {
            const mid = Math.floor((lo + hi) / 2);
            if (addPeriod(mid, periodIso) <= now) lo = mid;
            else hi = mid;
          }
          created = pick([lo - 1, lo, hi, hi + 1]);
        }
        // Ties on created_at (same millisecond), broken by seq (insertion order, µs) and only
        // then by id: seq is drawn independently of the id, so the two orders often disagree;
        // sometimes two candidates share a seq too, and the id decides.
        if (i > 0 && random() < 0.3) created = now - 1000;
        const seq = random() < 0.1 ? created * 1000 : created * 1000 + Math.floor(random() * 1000);
        return {
          id: `job-${Math.floor(random() * 100)}-${i}`,
          state,
          created_at: created,
          seq,
          scheduled_at: state === 'scheduled' ? now + 60_000 + i : null,
        };
      });
      const expected = decideConflict({ policy, uniquenessKey: 'k', now, candidates, canReplaceActive: false });
      const input = {
        onConflict: policy.on_conflict,
        states: policy.states,
        period: periodArgs(policy),
        now,
        candidates: candidates.map((c) => ({ id: c.id, state: c.state, created: c.created_at, seq: c.seq, due: c.scheduled_at ?? null })),
      };
      const [action, existing, cancel, scheduledAt] = (await redis.eval(PROBE, 0, JSON.stringify(input))) as [
        string,
        string,
        string[],
        string,
      ];
      const context = JSON.stringify({ policy, now, candidates });
      switch (expected.action) {
        case 'insert':
          expect(action, context).to.equal('insert');
          break;
        case 'ignore':
          expect([action, existing], context).to.deep.equal(['ignore', expected.existing.id]);
          break;
        case 'reject':
          expect([action, existing], context).to.deep.equal([
            expected.error.reason === 'active_not_replaceable' ? 'reject_active' : 'reject',
            expected.existing.id,
          ]);
          break;
        case 'replace':
          expect([action, existing, cancel, scheduledAt], context).to.deep.equal([
            'replace',
            expected.existing.id,
            expected.supersede.map((c) => c.id),
            expected.scheduledAt === null ? '' : String(expected.scheduledAt),
          ]);
          break;
      }
    }
  });
  it('with the extensions (x_period_anchor, x_update, x_max_wait, x_successor): ojsDecideConflict decides as decideUniqueConflict on 3,000 random candidate sets', async function () {
    const random = prng(1207);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const strategies = ['reject', 'ignore', 'replace', 'replace_except_schedule'] as const;
    const anchors = [undefined, 'scheduled_at', 'last_duplicate', 'finished_at'] as const;
    const updatable = ['scheduled', 'available', 'pending', 'retryable', 'active'] as const;
    const seen: Record<string, number> = {};
    for (let round = 0; round < 3000; round++) {
      const states = OJS_JOB_STATES.filter(() => random() < 0.5);
      if (states.length === 0) states.push(pick(OJS_JOB_STATES));
      const periodIso = pick(PERIODS);
      const terminal = states.some((state) => state === 'completed' || state === 'discarded' || state === 'cancelled');
      const drawn = pick(anchors);
      // finished_at needs a terminal state in states.
      const anchor = drawn === 'finished_at' && !terminal ? undefined : drawn;
      const update: Record<string, UpdateField[]> = {};
      if (random() < 0.5)
        for (const state of updatable)
          if (states.includes(state) && random() < 0.5) {
            const fields = UPDATE_FIELDS.filter(() => random() < 0.5);
            update[state] = fields.length > 0 ? fields : [pick(UPDATE_FIELDS)];
          }
      const input: UniquePolicyInput = {
        states,
        on_conflict: pick(strategies),
        ...(periodIso ? { period: periodIso } : {}),
        ...(anchor && periodIso ? { x_period_anchor: anchor } : {}),
        ...(Object.keys(update).length > 0 ? { x_update: update } : {}),
        ...(Object.values(update).some((fields) => fields.includes('scheduled_at')) && random() < 0.7
          ? { x_max_wait: pick(['PT30S', 'PT1H', 'P1M', 'P1Y2M3DT4H']) }
          : {}),
        // x_successor needs `active` in states and no x_update entry for it.
        ...(states.includes('active') && update.active === undefined && random() < 0.4 ? { x_successor: 'latest' } : {}),
      } as UniquePolicyInput;
      const policy = parseUniquePolicy(input);
      const now = Math.floor(random() * Date.UTC(2100, 0, 1)) + 1e12;
      const span = periodIso ? addPeriod(now, periodIso) - now : 86_400_000;
      const candidates: ConflictCandidate[] = Array.from({ length: Math.floor(random() * 5) }, (_, i) => {
        const state = pick(OJS_JOB_STATES) as OjsJobState;
        const created = now - Math.floor(random() * span * 2);
        // The due time and the last attempt land before, around and after the window's edges.
        const scheduled = random() < 0.2 ? null : created + Math.floor((random() - 0.3) * span * 2);
        const last = random() < 0.4 ? null : created + Math.floor(random() * span * 2);
        const finished = state === 'completed' || state === 'discarded' || state === 'cancelled';
        return {
          id: `job-${Math.floor(random() * 100)}-${i}`,
          state,
          created_at: created,
          seq: created * 1000 + Math.floor(random() * 1000),
          scheduled_at: scheduled,
          last_duplicate_at: last,
          finished_at: finished ? created + Math.floor(random() * span * 2) : null,
        };
      });
      const expected = decideUniqueConflict({ policy, uniquenessKey: 'k', now, candidates, canReplaceActive: false });
      const lua = {
        onConflict: policy.on_conflict,
        states: policy.states,
        period: periodArgs(policy),
        now,
        anchor: policy.x_period_anchor ?? '',
        update: policy.x_update ?? null,
        maxWait:
          policy.x_max_wait === undefined
            ? null
            : (({ years, months, fixedPartMs }) => [years, months, fixedPartMs])(parsePeriod(policy.x_max_wait)),
        successor: policy.x_successor ?? null,
        candidates: candidates.map((c) => ({
          id: c.id,
          state: c.state,
          created: c.created_at,
          seq: c.seq,
          due: c.state === 'scheduled' ? c.scheduled_at : null,
          sched: c.scheduled_at ?? null,
          last: c.last_duplicate_at ?? null,
          finished: c.finished_at ?? null,
        })),
      };
      const [action, existing, cancel, scheduledAt, touched, fields, dueLimit] = (await redis.eval(PROBE, 0, JSON.stringify(lua))) as [
        string,
        string,
        string[],
        string,
        string[],
        string[],
        string,
      ];
      const context = JSON.stringify({ policy, now, candidates });
      const touch = 'touch' in expected && expected.touch ? expected.touch.map((c) => c.id) : [];
      seen[expected.action] = (seen[expected.action] ?? 0) + 1;
      if (touch.length > 0) seen.touch = (seen.touch ?? 0) + 1;
      switch (expected.action) {
        case 'insert':
          expect(action, context).to.equal('insert');
          break;
        case 'update':
          expect([action, existing, fields, touched, dueLimit], context).to.deep.equal([
            'update',
            expected.existing.id,
            expected.fields,
            touch,
            expected.scheduledAtLimit === undefined ? '' : String(expected.scheduledAtLimit),
          ]);
          if (expected.scheduledAtLimit !== undefined) seen.limit = (seen.limit ?? 0) + 1;
          if (policy.x_period_anchor === 'finished_at') seen.finished = (seen.finished ?? 0) + 1;
          break;
          break;
        case 'successor':
          expect([action, existing, touched], context).to.deep.equal(['successor', expected.existing.id, touch]);
          break;
        case 'ignore':
          if (policy.x_period_anchor === 'finished_at') seen.finished = (seen.finished ?? 0) + 1;
          expect([action, existing, touched], context).to.deep.equal(['ignore', expected.existing.id, touch]);
          break;
        case 'reject':
          expect([action, existing, touched], context).to.deep.equal([
            expected.error.reason === 'active_not_replaceable' ? 'reject_active' : 'reject',
            expected.existing.id,
            touch,
          ]);
          break;
        case 'replace':
          expect([action, existing, cancel, scheduledAt, touched], context).to.deep.equal([
            'replace',
            expected.existing.id,
            expected.supersede.map((c) => c.id),
            expected.scheduledAt === null ? '' : String(expected.scheduledAt),
            [],
          ]);
          break;
      }
    }
    // Every answer, and the touch of last_duplicate, came up often enough to be compared.
    for (const kind of ['insert', 'update', 'successor', 'ignore', 'reject', 'replace', 'touch', 'limit', 'finished'])
      expect(seen[kind] ?? 0, kind).to.be.greaterThan(50);
  });
});
