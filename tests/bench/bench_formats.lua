-- wrk script for tests/bench/bench_formats.sh: POST pre-generated reports of one format in turn.
-- Env: BENCH_DIR (report-N.EXT files, N from 0), BENCH_COUNT, BENCH_EXT (crash, kscrash,
-- bugsnag, plcrash), BENCH_PATH (path and query), BENCH_TYPE (Content-Type), BENCH_HEADERS
-- (more headers, "Name: value" separated by "|").
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
    f:close()
  end
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
  return wrk.format("POST", path, headers, bodies[(counter % n) + 1])
end

local non202 = 0
function response(status, headers, body)
  if status ~= 202 then
    non202 = non202 + 1
    if non202 <= 3 then io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n") end
  end
end
