-- wrk script for tests/bench/bench_sentry.sh: POST pre-generated gzip'd Sentry envelopes in
-- turn to /api/{project}/envelope/ with the project's DSN key, as sentry-cocoa does.
-- Env: BENCH_DIR (envelope-N.bin files, N from 0), BENCH_COUNT, BENCH_KEY, BENCH_PROJECT.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "bench_post.lua").setup{
  name = function(i) return "envelope-" .. i .. ".bin" end,
  path = function() return "/api/" .. os.getenv("BENCH_PROJECT") .. "/envelope/" end,
  headers = function()
    return {["X-Sentry-Auth"] = "Sentry sentry_version=7, sentry_key=" .. os.getenv("BENCH_KEY") ..
                                ", sentry_client=sentry.cocoa/8.40.1",
            ["Content-Type"] = "application/x-sentry-envelope",
            ["Content-Encoding"] = "gzip"}
  end,
  status = 200,
  unique = true,   -- an event_id sent again is stored once: every envelope once
}
