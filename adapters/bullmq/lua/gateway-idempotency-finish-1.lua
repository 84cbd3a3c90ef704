--[[
  gateway-idempotency-finish: stores the answer of a request that holds its `Idempotency-Key`
  claim (gateway-idempotency-claim-1.lua), so that a retry with the key is answered the same.

  Input:
    KEYS[1]  the key's record
    ARGV[1]  the claim's owner
    ARGV[2]  the answer's status
    ARGV[3]  the answer's body (JSON text)
    ARGV[4]  the answer's Location header, "" when none
    ARGV[5]  the retention, in ms, counted again from now

  Steps:
    1. Nothing, unless the record exists, has no answer and `owner` still holds it (a claim taken
       over after its lease lapsed belongs to the request that took it).
    2. Write status, body, location; expire after the retention.

  Output: 1 stored, 0 not (the claim is no longer this owner's).

  All-or-nothing: one HSET after reads only.
]]
local rcall = redis.call

local record = rcall("HMGET", KEYS[1], "owner", "status")
if record[1] ~= ARGV[1] or record[2] then return 0 end
rcall("HSET", KEYS[1], "status", ARGV[2], "body", ARGV[3], "location", ARGV[4])
rcall("PEXPIRE", KEYS[1], ARGV[5])
return 1
