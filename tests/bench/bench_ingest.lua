-- wrk script for tests/bench/bench_ingest.sh: POST pre-generated crash reports in turn.
-- Env: BENCH_DIR (report-N.crash files, N from 0), BENCH_TOKEN (ingest token), BENCH_COUNT.
local bodies = {}
local n = 0
local counter = 0

function init(args)
  local dir = os.getenv("BENCH_DIR")
  local count = tonumber(os.getenv("BENCH_COUNT"))
  for i = 0, count - 1 do
    local f = assert(io.open(dir .. "/report-" .. i .. ".crash", "rb"))
    bodies[i + 1] = f:read("*a")
    f:close()
  end
  n = count
  -- threads start at different reports so that they do not post in lockstep
  counter = math.random(0, n - 1)
end

function request()
  counter = counter + 1
  local body = bodies[(counter % n) + 1]
  return wrk.format("POST", "/api/v1/reports", {
    ["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN"),
    ["Content-Type"] = "text/plain",
  }, body)
end

local non202 = 0
function response(status, headers, body)
  if status ~= 202 then
    non202 = non202 + 1
    if non202 <= 3 then io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n") end
  end
end
