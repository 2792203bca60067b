-- wrk script for tests/bench/bench_formats.sh: POST pre-generated reports of one format in turn.
-- Env: BENCH_DIR (report-N.EXT files, N from 0), BENCH_COUNT, BENCH_EXT (crash, kscrash,
-- bugsnag, plcrash), BENCH_PATH (path and query), BENCH_TYPE (Content-Type), BENCH_HEADERS
-- (more headers, "Name: value" separated by "|"), BENCH_RUN (unique per run). A body's
-- "@@REPORT_ID@@" becomes an id of its own per request (KSCrash's sink stores a report once
-- per report.id: a replayed body would measure that answer, not an ingest); its
-- "@@EVENT_ID_SLOT_00000000000000@@" (32 characters) becomes 32 hex digits of its own (a
-- Sentry event_id, stored once per id; the same length keeps the envelope's item length).
local run = os.getenv("BENCH_RUN") or "0"
local nthreads = 0
local thread_id = 0
local has_slot = {}
local has_event_slot = {}

function setup(thread)
  thread:set("tid", nthreads)
  nthreads = nthreads + 1
end
local bodies = {}
local n = 0
local counter = 0
local headers = {}
local path = "/"

function init(args)
  local dir, ext = os.getenv("BENCH_DIR"), os.getenv("BENCH_EXT")
  n = tonumber(os.getenv("BENCH_COUNT"))
  for i = 0, n - 1 do
    local f = assert(io.open(dir .. "/report-" .. i .. "." .. ext, "rb"))
    bodies[i + 1] = f:read("*a")
    has_slot[i + 1] = string.find(bodies[i + 1], "@@REPORT_ID@@", 1, true) ~= nil
    has_event_slot[i + 1] = string.find(bodies[i + 1], "@@EVENT_ID_SLOT_00000000000000@@", 1, true) ~= nil
    f:close()
  end
  thread_id = rawget(_G, "tid") or 0 -- set by setup()
  path = os.getenv("BENCH_PATH")
  headers["Content-Type"] = os.getenv("BENCH_TYPE")
  for h in string.gmatch(os.getenv("BENCH_HEADERS") or "", "[^|]+") do
    local name, value = string.match(h, "^%s*([^:]+):%s*(.*)$")
    headers[name] = value
  end
  counter = math.random(0, n - 1)
end

function request()
  counter = counter + 1
  local k = (counter % n) + 1
  local body = bodies[k]
  if has_slot[k] then
    body = string.gsub(body, "@@REPORT_ID@@", string.format("bench-%s-%d-%d", run, thread_id, counter), 1)
  end
  if has_event_slot[k] then
    local id = string.format("%08x%08x%016x", tonumber(string.sub(run, -9)) % 4294967296, thread_id, counter)
    body = string.gsub(body, "@@EVENT_ID_SLOT_00000000000000@@", id)
  end
  return wrk.format("POST", path, headers, body)
end

local non202 = 0
function response(status, headers, body)
  if status ~= 202 and status ~= 200 then   -- a Sentry envelope is answered 200
    non202 = non202 + 1
    if non202 <= 3 then io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n") end
  end
end
