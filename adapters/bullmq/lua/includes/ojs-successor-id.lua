--[[
  ojsSuccessorTaken(base, id) -> whether `id` is the id of a pending successor in this queue
  ojsSuccessorOwn(base, id, request) -> whether that successor was stored by the add carrying `request`
  ojsSuccessorOjs(jobKey) -> the `ojs` member of a job's stored BullMQ options, or nil: the OJS
    fields of a successor BullMQ promoted, until a writer adopts it (includes/ojs-successor)

  x_successor (includes/ojs-successor): a pending successor's id is taken, as a job's is
  (includes/ojs-id-taken), while its holder's `dn` hash still names it. Apart from
  includes/ojs-successor so that the id claim and the job state (includes/ojs-job-state) need nothing else.
]]
local OJS_SUCCESSOR_DEID = "ojs:s:"

local function ojsSuccessorTaken(base, id)
  local holder = rcall("HGET", base .. "ojs:successors", id)
  if not holder then return false end
  return rcall("HGET", base .. "dn:" .. OJS_SUCCESSOR_DEID .. holder, "jid") == id
end

local function ojsSuccessorOwn(base, id, request)
  local holder = rcall("HGET", base .. "ojs:successors", id)
  if not holder or request == "" then return false end
  local stored = rcall("HMGET", base .. "dn:" .. OJS_SUCCESSOR_DEID .. holder, "jid", "ojsReq")
  return stored[1] == id and stored[2] == request
end


local function ojsSuccessorOjs(jobKey)
  local stored = rcall("HGET", jobKey, "opts")
  if not stored then return nil end
  local ok, opts = pcall(cjson.decode, stored)
  if not ok or type(opts) ~= "table" or type(opts["ojs"]) ~= "table" then return nil end
  return opts["ojs"]
end

