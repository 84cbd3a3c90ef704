--[[
  ojsObserve(entries, uniquenessKey, policy, policyBits, nowMs, request, adopt, counting) -> candidates, kept, changed, own, widened

  Every job of a key's index entries (includes/ojs-index, ojsIndexRead) with its OJS state, as
  candidates for ojsDecideConflict: { id, queue, base, state, location, created, seq, due, entry,
  dup (its `ojsDup`, for includes/ojs-count-duplicate; read only when `counting`) },
  and for a policy with `x_period_anchor` or `x_update` also sched, last, finished (a finished
  job's BullMQ `finishedOn`, or its archive's `ojsCancelledOn`) and hashKey (the job's hash or archive).

  Reads only; writes nothing, but with `adopt` (a caller that writes the entries back) for adopting
  a successor BullMQ promoted (x_successor, includes/ojs-successor: its OJS fields onto its hash,
  `changed` and `widened` set so the caller writes its entry's new time and window back); an
  entry of a pending successor stays. `kept` is `entries` without those no decision can need again:
  their job is gone (or the id now holds a job of no key sharing the field), or the job is
  cancelled or completed past the replay grace, and neither the policy it was added with (its
  entry's own policy) nor this add's counts it. A live job is never dropped, nor a failed one (a
  retry revives it) nor one finished or cancelled within the replay grace (includes/ojs-index,
  ojsFinishedKept, ojsInReplayGrace: a re-sent add finds its job there even once a replace
  archived it), up to the newest OJS_KEPT_FINISHED_MAX of those: they stay in `kept` but, uncounted,
  are no candidates. Nor is a finished job a replace superseded (OJS_SUPERSEDED_BIT), whatever the
  policies count: its entry is kept only as an uncounted one is. When this add's policy counts a
  finished job its own policy no longer does, the kept
  entry is widened by this policy (ojsWidenOwn), so the sweep (ojsSweep) keeps it for a later add
  of the same policy. `changed` says whether `kept` differs from `entries`; the caller writes it
  back (ojsIndexWrite) once every check has passed; `widened` whether an entry was widened (the
  entry tables are updated in place, so `entries` itself then holds the widened entries). Leaving dropped entries out of `candidates`
  changes no decision: an entry this policy does not count is never a duplicate.

  `own`: when `request` is not "" and a job of the entries (live or archived, whatever its
  state) was inserted by the add carrying that token (`ojsReq`), { id, queue, base, location } of
  it: this add is a re-execution (see unique-add, "Idempotent").
]]
--- @include "includes/ojs-archive-key"
--- @include "includes/ojs-successor"
-- At most this many entries of one key are kept only because ojsFinishedKept or ojsInReplayGrace
-- says so (failed, or finished or cancelled within the replay grace), the newest: without a cap
-- a key whose jobs keep failing, or a hot key of short jobs or of replaces, would hold an entry
-- per job ever added and every add of it would read them all. Older ones are dropped as any
-- uncounted finished entry is (docs/bullmq.md).
local OJS_KEPT_FINISHED_MAX = 8

local function ojsObserve(entries, uniquenessKey, policy, policyBits, nowMs, request, adopt, counting)
  local candidates, kept, changed, own, widened = {}, {}, false, nil, false
  local finishedOnly = {}
  for _, entry in ipairs(entries) do
    local jobId, base = entry.id, entry.base
    local state, location, due, madeBy, dup, promoted = ojsIndexedJobState(base, jobId, uniquenessKey, nowMs, counting)
    if promoted ~= nil and adopt then
      -- x_successor: a successor BullMQ promoted, adopted here (includes/ojs-successor); its entry
      -- takes the job's own created_at and window.
      ojsSuccessorAdopt(base .. jobId, promoted, entry)
      rcall("HDEL", base .. "ojs:successors", jobId)
      changed, widened = true, true
    end
    local created = math.floor(entry.us / 1000)
    if state ~= nil and request ~= "" and madeBy == request then
      own = { id = jobId, queue = entry.queue, base = base, location = location }
    end
    local candidate = { id = jobId, queue = entry.queue, base = base, state = state, location = location,
      created = created, seq = entry.us, due = due, entry = entry, dup = dup }
    if state ~= nil and (policy.anchor ~= "" or policy.update ~= nil) then
      -- x_period_anchor, x_update: the job's current due time (as getJob reports it) and its last
      -- duplicate attempt, read only for a policy that needs them.
      local hashKey = base .. jobId
      if location == "archive" then hashKey = ojsArchiveKey(base, jobId) end
      local f = rcall("HMGET", hashKey, "timestamp", "delay", "ojsLast", BULLMQ_FINISHED_ON, "ojsCancelledOn")
      candidate.sched = due or ((tonumber(f[1]) or created) + (tonumber(f[2]) or 0))
      candidate.last = tonumber(f[3])
      if state == "completed" or state == "discarded" or state == "cancelled" then candidate.finished = tonumber(f[4]) or tonumber(f[5]) end
      candidate.hashKey = hashKey
    end
    -- A job of another key sharing the field: not a candidate, and not this add's to drop.
    -- A pending successor (x_successor): its entry waits for its job. One whose holder BullMQ
    -- removed (and its next-job hash with it) leaves its id's reservation, dropped here.
    local pending = location == "gone" and ojsSuccessorTaken(base, jobId)
    if location == "gone" and not pending and adopt then rcall("HDEL", base .. "ojs:successors", jobId) end
    local keep, entryOnly = state ~= nil, location == "other" or pending
    if state == "completed" or state == "discarded" or state == "cancelled" then
      local hashKey = base .. jobId
      if location == "archive" then hashKey = ojsArchiveKey(base, jobId) end
      -- A superseded entry (a replace took the key from its job) has no own terminal bits, so it
      -- comes here too, and counts for no policy again (the core's `superseded`).
      if not ojsOwnCounts(entry.bits, ojsOwnEnd(entry.bits, entry.periodEnd, hashKey), state, nowMs) then
        keep = not ojsHasBit(entry.bits, OJS_SUPERSEDED_BIT) and ojsIsDuplicate(candidate, policy, nowMs)
        if not keep then
          -- Not a candidate, but its entry stays while a retry can revive it or a re-sent add
          -- needs it (includes/ojs-index, ojsFinishedKept): the add whose reply was lost may have
          -- seen its job replaced and the key added again before ioredis re-sent it.
          if state == "cancelled" then
            entryOnly = ojsInReplayGrace(rcall("HGET", hashKey, "ojsCancelledOn"), nowMs)
          else
            entryOnly = ojsFinishedKept(base, jobId, rcall("HGET", hashKey, BULLMQ_FINISHED_ON), nowMs)
          end
          if entryOnly then finishedOnly[#finishedOnly + 1] = entry end
        else
          local addEnd = 0
          if policy.fixedMs ~= nil then
            addEnd = ojsPeriodEnd(ojsPeriodAnchor(candidate, policy.anchor), policy.years, policy.months, policy.fixedMs)
          end
          entry.bits, entry.periodEnd = ojsWidenOwn(entry.bits, entry.periodEnd, policyBits, addEnd)
          changed, widened = true, true
          -- Its archive must last as long as this policy counts it (0: for good): ojsKeepArchives.
          if location == "archive" then candidate.archiveUntil, candidate.hashKey = addEnd, hashKey end
        end
      end
    end
    if keep then
      kept[#kept + 1] = entry
      candidates[#candidates + 1] = candidate
    elseif entryOnly then
      kept[#kept + 1] = entry
    else
      changed = true
    end
  end
  if #finishedOnly > OJS_KEPT_FINISHED_MAX then
    table.sort(finishedOnly, function(a, b) return tonumber(a.us) > tonumber(b.us) end)
    local drop = {}
    for i = OJS_KEPT_FINISHED_MAX + 1, #finishedOnly do drop[finishedOnly[i]] = true end
    local capped = {}
    for _, entry in ipairs(kept) do
      if not drop[entry] then capped[#capped + 1] = entry end
    end
    kept, changed = capped, true
  end
  return candidates, kept, changed, own, widened
end

--[[
  ojsTouch(touch, policy, policyBits, nowMs) -> whether an index entry changed

  x_period_anchor "last_duplicate": records `nowMs` as the last duplicate attempt (`ojsLast`) on
  every touched candidate's hash (its archive for a cancelled job) and moves its window's end:
  the index entry is widened to the end this policy now gives it (the caller writes the entries
  back), and an archive that expires is kept at least that long.
]]
local function ojsTouch(touch, policy, policyBits, nowMs)
  if touch == nil then return false end
  local addEnd = 0
  if policy.fixedMs ~= nil then addEnd = ojsPeriodEnd(nowMs, policy.years, policy.months, policy.fixedMs) end
  for _, candidate in ipairs(touch) do
    rcall("HSET", candidate.hashKey, "ojsLast", nowMs)
    local entry = candidate.entry
    entry.bits, entry.periodEnd = ojsWidenOwn(entry.bits, entry.periodEnd, policyBits, addEnd)
    if candidate.location == "archive" and addEnd > 0 then
      local ttl = rcall("PTTL", candidate.hashKey)
      if ttl > 0 and ttl < addEnd - nowMs then rcall("PEXPIRE", candidate.hashKey, addEnd - nowMs) end
    end
  end
  return true
end

--[[
  ojsKeepArchives(candidates, nowMs)

  An archive whose entry ojsObserve widened (a later policy counts the cancelled job longer than
  its own did) is kept that long: PERSIST for a policy without a period, else its expiry moved to
  the window's end when it would come sooner. Called by the writer once the widened entries are
  written back.
]]
local function ojsKeepArchives(candidates, nowMs)
  for _, candidate in ipairs(candidates) do
    local untilMs = candidate.archiveUntil
    if untilMs ~= nil then
      local ttl = rcall("PTTL", candidate.hashKey)
      if untilMs == 0 then
        if ttl > 0 then rcall("PERSIST", candidate.hashKey) end
      elseif ttl > 0 and ttl < untilMs - nowMs then
        rcall("PEXPIRE", candidate.hashKey, untilMs - nowMs)
      end
    end
  end
end
