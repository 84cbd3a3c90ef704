--[[
  ojsCountDuplicate(hashKey, request, nowMs, hash) -> hash

  Duplicate counts (docs/decisions.md, "Duplicate counts"): the job an add met and left holding
  its key (ignore, reject, an update, a replace refused by an active job) counts the add in its
  own hash, beside the fields the job view reads:
    ojsDups    how many adds were counted
    ojsDupAt   when the last one was (Redis TIME, ms)
    ojsDupReq  its request token: the same add written again by ioredis after a lost reply finds
               its token there and is not counted again
  hash: the job's hash already read by the caller (HGETALL, flat, as ojsReadJob returns it),
  patched in place so that the reply carries the count; nil to read the two fields it needs.
  One HSET beside the read the answer makes anyway (HMGET for a refusal).
]]
local function ojsCountDuplicate(hashKey, request, nowMs, hash)
  local count, last
  local at = {}
  if hash ~= nil then
    for i = 1, #hash, 2 do
      local name = hash[i]
      if name == "ojsDups" or name == "ojsDupAt" or name == "ojsDupReq" then at[name] = i + 1 end
    end
    count, last = at.ojsDups and hash[at.ojsDups], at.ojsDupReq and hash[at.ojsDupReq]
  else
    local stored = rcall("HMGET", hashKey, "ojsDups", "ojsDupReq")
    count, last = stored[1], stored[2]
  end
  if request ~= "" and last == request then return hash end
  local values = { ojsDups = tostring((tonumber(count) or 0) + 1), ojsDupAt = tostring(nowMs), ojsDupReq = request }
  rcall("HSET", hashKey, "ojsDups", values.ojsDups, "ojsDupAt", values.ojsDupAt, "ojsDupReq", request)
  if hash ~= nil then
    for _, name in ipairs({ "ojsDups", "ojsDupAt", "ojsDupReq" }) do
      if at[name] then
        hash[at[name]] = values[name]
      else
        hash[#hash + 1] = name
        hash[#hash + 1] = values[name]
      end
    end
  end
  return hash
end
