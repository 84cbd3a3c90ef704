--[[
  gateway-idempotency-claim: claims an `Idempotency-Key` of the OJS gateway
  (server/bullmq-idempotency-records.ts) for one request, or says why not. Not used by the
  adapter itself.

  Input:
    KEYS[1]  the key's record, a hash (<prefix>:ojs-gateway:idempotency:<scope>:<key digest>)

    ARGV[1]  the request's fingerprint (a digest of method, route and canonical body)
    ARGV[2]  the claim's owner (a random id of the request)
    ARGV[3]  the job ids the request's jobs get, a JSON array (stored with a new record)
    ARGV[4]  the lease, in ms: how long the claim answers "in progress"
    ARGV[5]  the retention, in ms: how long the record is kept

  Record fields: fp, ids, owner, lease (Redis time in ms when the claim lapses), and once an
  answer is stored: status, body, location.

  Steps:
    1. No record: write one (fp, ids, owner, lease), expiring after the retention.
    2. Another fingerprint: refuse. An answer stored: return it. A lease not yet passed: refuse.
    3. A lapsed claim (its owner crashed, or gave up on an unknown outcome): take it over
       (owner, lease), keeping the ids first given.

  Output:
    { "claimed", ids, "0" | "1" }             "1": a lapsed claim taken over (its jobs may exist)
    { "mismatch" }
    { "in_progress", ms until the lease passes }
    { "done", status, body, location ("" when none) }

  All-or-nothing: one HSET after reads only.
]]
local rcall = redis.call

--- @include "includes/ojs-now"

local nowMs = ojsNowMs()
local leaseMs = tonumber(ARGV[4])

local record = rcall("HMGET", KEYS[1], "fp", "ids", "lease", "status", "body", "location")
if not record[1] then
  rcall("HSET", KEYS[1], "fp", ARGV[1], "owner", ARGV[2], "ids", ARGV[3], "lease", tostring(nowMs + leaseMs))
  rcall("PEXPIRE", KEYS[1], ARGV[5])
  return { "claimed", ARGV[3], "0" }
end
if record[1] ~= ARGV[1] then return { "mismatch" } end
if record[4] then return { "done", record[4], record[5] or "", record[6] or "" } end
local lease = tonumber(record[3]) or 0
if lease > nowMs then return { "in_progress", tostring(lease - nowMs) } end
rcall("HSET", KEYS[1], "owner", ARGV[2], "lease", tostring(nowMs + leaseMs))
return { "claimed", record[2], "1" }
