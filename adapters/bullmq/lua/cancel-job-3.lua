--[[
  cancel-job: OJS CANCEL of one job. A job in a non-terminal state is archived as `cancelled`
  (includes/ojs-archive-job); its index entry stays, so that policies whose `states` include
  `cancelled` still see it.

  Input:
    KEYS[1] the job's hash key (<base><jobId>), declared for Redis Cluster routing
    KEYS[2] the queue's events stream
    KEYS[3] the queue's meta hash
    ARGV[1] the queue's key prefix with its colon (<base>)
    ARGV[2] job id
    ARGV[3] retention in ms of the archive when the job's own policy does not need it longer
            (includes/ojs-own-policy: no expiry if it checks `cancelled` without a period, else
            at least until its window closes); 0 = no expiry
    ARGV[4] the queue's index hash (<base>ojs:index: bullmq-sidecar-keys.ts, indexKey), for a job
            of the native path
    ARGV[last]  the layout check, after the script's own arguments (includes/ojs-layout): the queue's namespace; recorded by a cancel

  Output:
    { "cancelled", prevState, nowMs, archiveHash }
    { "terminal", state }        completed, discarded or cancelled already: nothing changed
    { "not_found" }           also for a key that is not a job (includes/ojs-is-job): BullMQ's own
                              keys under the prefix ("meta", "events" …) are never archived

  x_successor: a cancelled holder's pending successor is added as a job (includes/ojs-successor-promote),
  as BullMQ's finishing script adds it when the holder completes or fails for good.

  A flow child leaves its parent's dependencies (includes/ojs-detach-child). A job of the native
  path (BullMQ's deduplication key named it) is listed in its key's field of the queue's index
  (ARGV[4]), as a cancelled index job is.

  All-or-nothing, by construction: the state is read and every refusal (not_found, terminal)
  answered before the one write, ojsArchiveJob, which acts on the job hash just seen to exist.
]]
local rcall = redis.call

--- @bullmq-host

--- @include "includes/ojs-now"
--- @include "includes/ojs-archive-key"
--- @include "includes/ojs-job-state"
--- @include "includes/ojs-period-end"
--- @include "includes/ojs-is-job"
--- @include "includes/ojs-own-policy"
--- @include "includes/ojs-archive-job"
--- @include "includes/ojs-read-job"

--- @bullmq "addStandardJob"
--- @bullmq "addDelayedJob"
--- @bullmq "addPrioritizedJob"
--- @include "includes/ojs-bullmq-add"
--- @include "includes/ojs-successor-promote"
--- @bullmq-raw "releaseParentIfNoPendingDependencies"
--- @include "includes/ojs-detach-child"
--- @include "includes/ojs-layout"

local layoutRefusal, layoutMissing = ojsLayoutCheck(ARGV)
if layoutRefusal then return layoutRefusal end

local nowMs = ojsNowMs()
local base = ARGV[1]
local jobId = ARGV[2]
if not ojsIsJobOrAbsent(base .. jobId) then return { "not_found" } end
local state, location = ojsJobState(base, jobId, nowMs)
if state == nil then return { "not_found" } end
if state == "completed" or state == "discarded" or state == "cancelled" then return { "terminal", state } end
local maxEvents = bullmqMaxEvents(KEYS[3])
local heldKey = ojsArchiveJob(base, jobId, location, state, nil, "ojs-cancelled", nowMs, tonumber(ARGV[3]), KEYS[2], maxEvents,
  ojsDetachChild)
-- x_successor: the cancelled job's pending successor is added now (BullMQ's finishing script,
-- which would add it, never runs for an archived job); the deduplication key of a successor's own
-- chain is no native job's.
if rcall("HGET", ojsArchiveKey(base, jobId), "deid") == OJS_SUCCESSOR_DEID .. jobId then ojsSuccessorPromote(base, jobId, nowMs) end
if heldKey and string.sub(heldKey, 1, #OJS_SUCCESSOR_DEID) ~= OJS_SUCCESSOR_DEID then
  -- The native path's job (includes/ojs-native-add) has no index entry, and the deduplication key
  -- that named it went with it: listed in its key's field now (own policy: the default), so that
  -- it is its key's cancelled job as an index job is: an add re-sent after a lost reply finds its
  -- token there for the replay grace, and a policy counting `cancelled` meets it.
  local indexKey = ARGV[4]
  local packed = rcall("HGET", indexKey, heldKey)
  local flat = (packed and cmsgpack.unpack(packed)) or {}
  local created = tonumber(rcall("HGET", ojsArchiveKey(base, jobId), "timestamp")) or nowMs
  for _, value in ipairs({ created * 1000, "", jobId, 0, 0 }) do flat[#flat + 1] = value end
  rcall("HSET", indexKey, heldKey, cmsgpack.pack(flat))
end
ojsLayoutRecord(layoutMissing)
return { "cancelled", state, nowMs, ojsReadJob(base, jobId, "archive") }
