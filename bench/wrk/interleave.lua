-- wrk script for bench/http_load.py: cycle through a list of paths, count every status.
--
--   wrk ... -s bench/wrk/interleave.lua URL -- PATHS_FILE MODE EXPECTED_STATUS [HEADER]
--
-- PATHS_FILE: one path (with its query string) per line, requested in turn by each thread.
-- MODE: "cycle" sends the paths as they are; "conditional" is "cycle" that, like a browser,
--   takes up the ETag of any 200 answer as its next If-None-Match (the ETag moves when the
--   data or the time bucket does): such 200s are counted as "refreshed", not as errors.
-- EXPECTED_STATUS: the status every answer must have (200, or 304 for conditional GETs).
-- HEADER: an optional "Name: value" request header (If-None-Match, HX-Request).
-- done() prints one line "BENCH_JSON {...}" with the totals of all threads.

local threads = {}

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  paths = {}
  local f = assert(io.open(args[1], "r"))
  for line in f:lines() do
    if #line > 0 then table.insert(paths, line) end
  end
  f:close()
  conditional = args[2] == "conditional"
  expected = tonumber(args[3] or "200")
  headers = {}
  if args[4] ~= nil and #args[4] > 0 then
    local name, value = args[4]:match("^([^:]+):%s*(.*)$")
    headers[name] = value
  end
  index = (tid - 1) % #paths
  ok = 0
  unexpected = 0
  refreshed = 0
  non2xx = 0
  bytes = 0
  statuses = {}
end

function request()
  index = index % #paths + 1
  return wrk.format("GET", paths[index], headers)
end

function response(status, hdrs, body)
  if status == expected then
    ok = ok + 1
  elseif conditional and status == 200 then
    refreshed = refreshed + 1
    local tag = hdrs["ETag"] or hdrs["Etag"] or hdrs["etag"]
    if tag ~= nil then headers["If-None-Match"] = tag end
  else
    unexpected = unexpected + 1
  end
  if status < 200 or status > 299 then non2xx = non2xx + 1 end
  local key = tostring(status)
  statuses[key] = (statuses[key] or 0) + 1
  if body ~= nil then bytes = bytes + #body end
end

function done(summary, latency, requests)
  local t = { ok = 0, unexpected = 0, refreshed = 0, non2xx = 0, bytes = 0 }
  local all = {}
  for _, thread in ipairs(threads) do
    t.ok = t.ok + thread:get("ok")
    t.unexpected = t.unexpected + thread:get("unexpected")
    t.refreshed = t.refreshed + thread:get("refreshed")
    t.non2xx = t.non2xx + thread:get("non2xx")
    t.bytes = t.bytes + thread:get("bytes")
    for k, v in pairs(thread:get("statuses")) do all[k] = (all[k] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(all) do table.insert(parts, string.format('"%s":%d', k, v)) end
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"ok":%d,"unexpected":%d,"refreshed":%d,' ..
    '"non2xx":%d,' ..
    '"body_bytes":%d,"connect_errors":%d,"read_errors":%d,"write_errors":%d,' ..
    '"status_errors":%d,"timeouts":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"mean_us":%.1f,"statuses":{%s}}\n',
    summary.requests, summary.duration, t.ok, t.unexpected, t.refreshed, t.non2xx, t.bytes,
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.status,
    summary.errors.timeout, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, latency.mean, table.concat(parts, ",")))
end
