-- wrk script for tests/bench/bench_ingest.sh: POST pre-generated crash reports in turn.
-- Env: BENCH_DIR (report-N.crash files, N from 0), BENCH_TOKEN (ingest token), BENCH_COUNT.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "bench_post.lua").setup{
  name = function(i) return "report-" .. i .. ".crash" end,
  path = function() return "/api/v1/reports" end,
  headers = function()
    return {["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN"),
            ["Content-Type"] = "text/plain"}
  end,
  status = 202,
}
