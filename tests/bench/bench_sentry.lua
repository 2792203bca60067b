-- wrk script for tests/bench/bench_sentry.sh: POST pre-generated gzip'd Sentry envelopes in
-- turn to /api/{project}/envelope/ with the project's DSN key, as sentry-cocoa does.
-- Env: BENCH_DIR (envelope-N.bin files, N from 0), BENCH_COUNT, BENCH_KEY, BENCH_PROJECT.
local bodies = {}
local n = 0
local counter = 0

function init(args)
  local dir = os.getenv("BENCH_DIR")
  local count = tonumber(os.getenv("BENCH_COUNT"))
  for i = 0, count - 1 do
    local f = assert(io.open(dir .. "/envelope-" .. i .. ".bin", "rb"))
    bodies[i + 1] = f:read("*a")
    f:close()
  end
  n = count
  counter = math.random(0, n - 1)
end

function request()
  counter = counter + 1
  local body = bodies[(counter % n) + 1]
  return wrk.format("POST", "/api/" .. os.getenv("BENCH_PROJECT") .. "/envelope/", {
    ["X-Sentry-Auth"] = "Sentry sentry_version=7, sentry_key=" .. os.getenv("BENCH_KEY") ..
                        ", sentry_client=sentry.cocoa/8.40.1",
    ["Content-Type"] = "application/x-sentry-envelope",
    ["Content-Encoding"] = "gzip",
  }, body)
end

local non200 = 0
function response(status, headers, body)
  if status ~= 200 then
    non200 = non200 + 1
    if non200 <= 3 then io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n") end
  end
end
