--[[
  gateway-idempotency-abandon: ends a request's `Idempotency-Key` claim without an answer (its
  enqueue failed, perhaps after writing), so that the next request with the key takes the claim
  over at once (gateway-idempotency-claim-1.lua, step 3) instead of waiting for the lease.

  Input:
    KEYS[1]  the key's record
    ARGV[1]  the claim's owner

  Steps:
    1. Nothing, unless the record has no answer and `owner` still holds it.
    2. Set its lease to 0 (passed).

  Output: 1 ended, 0 not.

  All-or-nothing: one HSET after reads only.
]]
local rcall = redis.call

local record = rcall("HMGET", KEYS[1], "owner", "status")
if record[1] ~= ARGV[1] or record[2] then return 0 end
rcall("HSET", KEYS[1], "lease", "0")
return 1
