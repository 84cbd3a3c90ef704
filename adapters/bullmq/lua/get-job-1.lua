--[[
  get-job: one job's hash and OJS state, read atomically (OJS INFO).

  Input:
    KEYS[1] the job's hash key (<base><jobId>), declared for Redis Cluster routing
    ARGV[1] the queue's key prefix with its colon (<base>)
    ARGV[2] job id
    ARGV[last]  the layout check, after the script's own arguments (includes/ojs-layout): the queue's namespace

  Output:
    { "found", ojsState, nowMs, hash, dueMs or "" }
    { "not_found" }

  A key under the queue's prefix counts as a job only if it is a hash with BullMQ's `timestamp`
  field: an id such as "meta" or "events" names BullMQ's own keys, which are not jobs.

  Reads only.
]]
local rcall = redis.call

--- @bullmq-host

--- @include "includes/ojs-now"
--- @include "includes/ojs-job-state"
--- @include "includes/ojs-is-job"
--- @include "includes/ojs-read-job"
--- @include "includes/ojs-layout"

local layoutRefusal = ojsLayoutCheck(ARGV)
if layoutRefusal then return layoutRefusal end

local nowMs = ojsNowMs()
if not ojsIsJobOrAbsent(ARGV[1] .. ARGV[2]) then return { "not_found" } end
local state, location, due = ojsJobState(ARGV[1], ARGV[2], nowMs)
if state == nil then return { "not_found" } end
return { "found", state, nowMs, ojsReadJob(ARGV[1], ARGV[2], location), due or "" }
