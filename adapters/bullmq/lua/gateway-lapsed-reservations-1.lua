--[[
  gateway-lapsed-reservations: takes the OJS gateway's reservations that lapsed (a job an HTTP
  worker fetched and neither acked, nacked nor renewed in time: server/job-reservation.ts), the
  oldest first, each removed as it is taken, so that one gateway process over the prefix fails
  each back (server/bullmq-gateway-store.ts).

  Input:
    KEYS[1]  the reservations: a sorted set of job ids, scored by when each lapses (ms, Redis TIME)
    ARGV[1]  at most this many

  Steps:
    1. Redis's clock.
    2. The ids scored at or before it, the oldest first, at most ARGV[1]; removed.

  Output: { now (ms), id, id, ... }.

  All-or-nothing: one ZREM after reads only.
]]
local rcall = redis.call

--- @include "includes/ojs-now"

local nowMs = ojsNowMs()
local ids = rcall("ZRANGEBYSCORE", KEYS[1], "-inf", nowMs, "LIMIT", 0, tonumber(ARGV[1]))
if #ids > 0 then rcall("ZREM", KEYS[1], unpack(ids)) end
local reply = { tostring(nowMs) }
for _, id in ipairs(ids) do reply[#reply + 1] = id end
return reply
