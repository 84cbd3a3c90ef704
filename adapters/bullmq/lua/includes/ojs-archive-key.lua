--[[
  ojsArchiveKey(base, jobId) -> the archive of a cancelled job: `<base>ojs:cancelled:<id>`, where
  a cancel or a replace RENAMEs the job's hash (includes/ojs-archive-job). The one spelling of the
  layout in Lua; bullmq-sidecar-keys.ts (archiveKey) is the one in TypeScript.
]]
local function ojsArchiveKey(base, jobId)
  return base .. "ojs:cancelled:" .. jobId
end
