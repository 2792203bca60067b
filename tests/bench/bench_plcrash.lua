-- wrk script for tests/bench/bench_plcrash.sh: POST pre-generated reports in turn.
-- Env: BENCH_DIR (report-N.EXT files, N from 0), BENCH_EXT ("crash" or "plcrash"),
-- BENCH_TYPE (the Content-Type), BENCH_TOKEN (ingest token), BENCH_COUNT.
local bodies = {}
local n = 0
local counter = 0

function init(args)
  local dir, ext = os.getenv("BENCH_DIR"), os.getenv("BENCH_EXT")
  n = tonumber(os.getenv("BENCH_COUNT"))
  for i = 0, n - 1 do
    local f = assert(io.open(dir .. "/report-" .. i .. "." .. ext, "rb"))
    bodies[i + 1] = f:read("*a")
    f:close()
  end
  counter = math.random(0, n - 1)
end

function request()
  counter = counter + 1
  return wrk.format("POST", "/api/v1/reports", {
    ["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN"),
    ["Content-Type"] = os.getenv("BENCH_TYPE"),
  }, bodies[(counter % n) + 1])
end

local non202 = 0
function response(status, headers, body)
  if status ~= 202 then
    non202 = non202 + 1
    if non202 <= 3 then io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n") end
  end
end
