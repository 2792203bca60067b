-- What the wrk scripts of tests/bench/ share (loaded with dofile by bench_ingest.lua and
-- bench_sentry.lua): POST pre-generated bodies in turn, each thread
-- starting at a random one so that threads do not post in lockstep, and report the first
-- answers whose status is not the expected one.
-- Env: BENCH_DIR (the bodies), BENCH_COUNT (how many: names for 0 .. BENCH_COUNT - 1).
-- setup{name = function(i) (file name of body i in BENCH_DIR), path = function() (the
-- request path), headers = function() (a table), status = (the expected status)} defines
-- wrk's init, request and response; path and headers are asked at request time (after env).
local M = {}

function M.setup(o)
  local bodies, n, counter, unexpected = {}, 0, 0, 0

  function init(args)
    local dir = os.getenv("BENCH_DIR")
    n = tonumber(os.getenv("BENCH_COUNT"))
    for i = 0, n - 1 do
      local f = assert(io.open(dir .. "/" .. o.name(i), "rb"))
      bodies[i + 1] = f:read("*a")
      f:close()
    end
    counter = math.random(0, n - 1)
  end

  function request()
    counter = counter + 1
    return wrk.format("POST", o.path(), o.headers(), bodies[(counter % n) + 1])
  end

  function response(status, headers, body)
    if status ~= o.status then
      unexpected = unexpected + 1
      if unexpected <= 3 then io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n") end
    end
  end
end

return M
