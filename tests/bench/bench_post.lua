-- What the wrk scripts of tests/bench/ share (loaded with dofile by bench_ingest.lua and
-- bench_sentry.lua): POST pre-generated bodies in turn, and report the
-- first answers whose status is not the expected one.
-- Env: BENCH_DIR (the bodies), BENCH_COUNT (how many: names for 0 .. BENCH_COUNT - 1),
-- BENCH_THREADS (wrk's -t, for `unique`).
-- setup{name = function(i) (file name of body i in BENCH_DIR), path = function() (the
-- request path), headers = function() (a table), status = (the expected status), unique =
-- (optional) true} defines wrk's setup, init, request, response and done; path and headers
-- are asked at request time. Without `unique` every thread loads every body and starts at a
-- random one so that threads do not post in lockstep. With `unique` (bodies that must not be
-- sent twice, as events with their own ids: a resend is stored once) thread k of T sends
-- bodies k, k + T, k + 2T, ... once each, and `done` says how many it had to send again
-- after running out (then the run was longer than the bodies generated for it).
local M = {}

function M.setup(o)
  local bodies, n, counter, unexpected = {}, 0, 0, 0
  local threads, nthreads = {}, 0

  function setup(thread)
    thread:set("thread_index", nthreads)
    nthreads = nthreads + 1
    threads[nthreads] = thread
  end

  function init(args)
    local dir = os.getenv("BENCH_DIR")
    local count = tonumber(os.getenv("BENCH_COUNT"))
    local first, step = 0, 1
    if o.unique then
      first, step = thread_index or 0, tonumber(os.getenv("BENCH_THREADS") or "1")
    end
    for i = first, count - 1, step do
      local f = assert(io.open(dir .. "/" .. o.name(i), "rb"))
      n = n + 1
      bodies[n] = f:read("*a")
      f:close()
    end
    counter = o.unique and 0 or math.random(0, n - 1)
    wrapped = 0   -- a global of the thread: done() reads it with thread:get
  end

  function request()
    counter = counter + 1
    if o.unique and counter > n then
      wrapped = wrapped + 1
    end
    return wrk.format("POST", o.path(), o.headers(), bodies[((counter - 1) % n) + 1])
  end

  function response(status, headers, body)
    if status ~= o.status then
      unexpected = unexpected + 1
      if unexpected <= 3 then io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n") end
    end
  end

  function done(summary, latency, requests)
    if not o.unique then return end
    local again = 0
    for _, t in ipairs(threads) do again = again + (t:get("wrapped") or 0) end
    if again > 0 then
      io.stderr:write("bodies sent a second time (too few generated for the run): " .. again .. "\n")
    end
  end
end

return M
