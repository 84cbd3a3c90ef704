--[[
  ojsUpdateJob(existing, fields, new, nowMs, K) -> changed

  The `x_update` extension: copies `fields` (in the core's UPDATE_FIELDS order) of the new job
  onto `existing` (a candidate of includes/ojs-observe, with `sched`, its current due time), in
  place: it keeps its id, timestamp (created_at), name and queue. `new` is
  { data, meta ("" = {}), priority (BullMQ's, 0 = none), attempts (nil = BullMQ's default),
  due (epoch ms) }, the values the new job would have been inserted with; K, the adding queue's
  keys in unique-add's order, which the spliced scripts take theirs from: the moves use the keys of
  the existing job's own queue, in that order (under a policy without `queue` it may be another
  queue's job, whose keys share the hash-tagged prefix's slot). Returns the fields whose stored
  value differed, in the order given (an identical re-enqueue gives none).

  The moves are BullMQ's own, spliced (bullmq-host.ts, BULLMQ_MOVE_SCRIPTS): changePriority
  re-adds a waiting job to `wait` or `prioritized` under its new priority, changeDelay gives a
  delayed job its new due time, promote makes a delayed job due now. A waiting job given a future
  due time is taken off `wait`/`prioritized` and handed to changeDelay through `delayed` (it
  finds the job there and gives it BullMQ's score, marker and `delayed` event). An active job
  gets stored values only (hash fields): no list, no lock, the running attempt untouched; the
  same for a pending job (waiting for children), whose due time is its parent's business.
  Cannot fail: every call acts on the job hash step 3 saw exist, and the spliced scripts' only
  failure codes (missing job, not in `delayed`) are excluded by the location checks here.
]]
local function ojsUpdateJob(existing, fields, new, nowMs, K)
  local base, jobId = existing.base, existing.id
  local jobKey = base .. jobId
  -- Given the adding queue's keys, changePriority / changeDelay / promote would look for a job of
  -- another queue in the wrong lists and do nothing (the job kept its old due time).
  if K[1] ~= base .. "wait" then
    K = { base .. "wait", base .. "paused", base .. "meta", base .. "id", base .. "completed", base .. "delayed",
      base .. "active", base .. "events", base .. "marker", base .. "prioritized", base .. "pc" }
  end
  local stored = rcall("HMGET", jobKey, "data", "ojsMeta", "priority", "opts", "timestamp")
  local changed = {}
  for _, name in ipairs(fields) do
    if name == "args" then
      if stored[1] ~= new.data then
        rcall("HSET", jobKey, "data", new.data)
        changed[#changed + 1] = name
      end
    elseif name == "meta" then
      if (stored[2] or "") ~= new.meta then
        if new.meta == "" then rcall("HDEL", jobKey, "ojsMeta") else rcall("HSET", jobKey, "ojsMeta", new.meta) end
        changed[#changed + 1] = name
      end
    elseif name == "priority" then
      if (tonumber(stored[3]) or 0) ~= new.priority then
        -- On an active or delayed job it only sets the hash field (BullMQ's own behaviour).
        __bullmq_changePriority(K, { new.priority, base, jobId, "0" })
        changed[#changed + 1] = name
      end
    elseif name == "max_attempts" then
      local opts = cjson.decode(stored[4] or "{}")
      local before = tonumber(opts.attempts) or 0
      local after = new.attempts or 0
      if (before > 0 and before or 1) ~= (after > 0 and after or 1) then
        if after > 0 then opts.attempts = after else opts.attempts = nil end
        rcall("HSET", jobKey, "opts", cjson.encode(opts))
        changed[#changed + 1] = name
      end
    elseif name == "scheduled_at" then
      if existing.sched ~= new.due then
        local timestamp = tonumber(stored[5]) or nowMs
        local location = existing.location
        local waiting = location == "wait" or location == "prioritized"
        if (location == "delayed" or waiting) and new.due > nowMs then
          if location == "wait" then
            if rcall("LREM", base .. "wait", 1, jobId) == 0 then rcall("LREM", base .. "paused", 1, jobId) end
          elseif location == "prioritized" then
            rcall("ZREM", base .. "prioritized", jobId)
          end
          if waiting then rcall("ZADD", base .. "delayed", 0, jobId) end
          __bullmq_changeDelay(K, { new.due - nowMs, nowMs, jobId, jobKey })
        elseif location == "delayed" then
          __bullmq_promote(K, { base, jobId })
        end
        -- The due time as getJob reports it (timestamp + delay): changeDelay stores the delay
        -- from now and promote stores 0, either of which would misreport it.
        rcall("HSET", jobKey, "delay", math.max(new.due - timestamp, 0))
        changed[#changed + 1] = name
      end
    end
  end
  return changed
end
