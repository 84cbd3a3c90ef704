--[[
  ojsDecideConflict(candidates, policy, nowMs) -> action, existing, supersede, scheduledAt, touch, fields, dueLimit

  The Lua twin of the core's `decideUniqueConflict` (src/conflict-decision.ts), §5–§9 and the
  policy extensions:
    candidates: array of { id, state, created, seq, due, sched, last, finished } (epoch ms but seq: the
                insertion order, Redis TIME in µs of the insert, the core's `seq`; due: the due
                time of a delayed job, nil otherwise; sched: the job's current due time, the
                core's `scheduled_at`, nil = created; last: the core's `last_duplicate_at`, nil
                = none; finished: when a finished job finished, the core's `finished_at`, nil = live
                or unknown)
    policy:     { states = set of OJS states, onConflict, years, months, fixedMs (nil = no
                period), anchor ("" | "scheduled_at" | "last_duplicate" | "finished_at"), update
                (nil or a map OJS state -> array of fields, in the core's UPDATE_FIELDS order),
                maxWait (nil or { years, months, fixedMs }: x_max_wait), successor (nil or
                "latest": x_successor) }
  A candidate is a duplicate iff its state is in `states` AND (no period OR now < anchor + period),
  the anchor being `created` (the spec's), `sched`, max(created, last) or, for a finished job,
  `finished` (created when unknown) (ojsPeriodAnchor); under "finished_at" a live job's window has
  not started: it is a duplicate whatever the period.
  The oldest duplicate (created, then seq, then id: the core's `insertionOrder`) is `existing`.
    "insert"        no duplicate
    "successor"     x_successor and existing is active: the add is kept as the key's pending
                    successor (includes/ojs-successor), nothing inserted; before x_update and
                    on_conflict, so a replace never cancels an active holder
    "update"        x_update has an entry for existing's state: fields = that entry; dueLimit =
                    existing's created + maxWait when the fields hold scheduled_at (x_max_wait: the
                    caller gives it min(the new due time, dueLimit)), else nil
    "ignore"        existing
    "reject"        existing
    "reject_active" replace met an active duplicate: §5.2 fallback to reject, nothing cancelled
    "replace"       existing, supersede = every duplicate (oldest first: the caller archives the
                    live ones and leaves the finished ones as they are, the core's `supersede`),
                    scheduledAt = the due time of the first scheduled duplicate for
                    replace_except_schedule, else nil
  touch: under the `last_duplicate` anchor, every duplicate (oldest first) for every answer but
  insert and replace; the caller records `now` on each (the core's `touch`). nil otherwise.
  Why a twin rather than deciding in JS: a replace must cancel and insert in the same script
  (§8.4), and the JS decision would need a second, version-checked round trip for it. The twin is
  checked against the core on random inputs (test/adapters/bullmq-lua-decision.test.ts).
]]
local OJS_FINISHED_STATES = { completed = true, discarded = true, cancelled = true }

local function ojsPeriodAnchor(candidate, anchor)
  if anchor == "scheduled_at" then return candidate.sched or candidate.created end
  if anchor == "finished_at" then return candidate.finished or candidate.created end
  if anchor == "last_duplicate" and candidate.last ~= nil and candidate.last > candidate.created then return candidate.last end
  return candidate.created
end

local function ojsIsDuplicate(candidate, policy, nowMs)
  if not policy.states[candidate.state] then return false end
  if policy.fixedMs == nil then return true end
  if policy.anchor == "finished_at" and not OJS_FINISHED_STATES[candidate.state] then return true end
  return nowMs < ojsPeriodEnd(ojsPeriodAnchor(candidate, policy.anchor), policy.years, policy.months, policy.fixedMs)
end

local function ojsDecideConflict(candidates, policy, nowMs)
  local duplicates = {}
  for _, candidate in ipairs(candidates) do
    if ojsIsDuplicate(candidate, policy, nowMs) then duplicates[#duplicates + 1] = candidate end
  end
  if #duplicates == 0 then return "insert" end
  table.sort(duplicates, function(a, b)
    if a.created ~= b.created then return a.created < b.created end
    -- Ties on the millisecond are common under load: insertion order names the same job as
    -- every other backend would. A missing seq falls through to the id, as in the core.
    if a.seq ~= nil and b.seq ~= nil and a.seq ~= b.seq then return a.seq < b.seq end
    return a.id < b.id
  end)
  local existing = duplicates[1]
  local touch = nil
  if policy.anchor == "last_duplicate" then touch = duplicates end
  if policy.successor ~= nil and existing.state == "active" then return "successor", existing, nil, nil, touch end
  local fields = policy.update and policy.update[existing.state]
  if fields ~= nil then
    local dueLimit = nil
    if policy.maxWait ~= nil then
      for _, name in ipairs(fields) do
        if name == "scheduled_at" then
          dueLimit = ojsPeriodEnd(existing.created, policy.maxWait[1], policy.maxWait[2], policy.maxWait[3])
        end
      end
    end
    return "update", existing, nil, nil, touch, fields, dueLimit
  end
  if policy.onConflict == "ignore" then return "ignore", existing, nil, nil, touch end
  if policy.onConflict == "reject" then return "reject", existing, nil, nil, touch end
  for _, candidate in ipairs(duplicates) do
    if candidate.state == "active" then return "reject_active", candidate, nil, nil, touch end
  end
  local scheduledAt = nil
  if policy.onConflict == "replace_except_schedule" then
    for _, candidate in ipairs(duplicates) do
      if candidate.state == "scheduled" then scheduledAt = candidate.due break end
    end
  end
  return "replace", existing, duplicates, scheduledAt
end
