-- wrk script for `npm run bench`: cycles through the paths given after `--` (with the `H:` fields given
-- there), counts the answers by status (wrk itself only counts "non-2xx/3xx") and prints one JSON line
-- for bench/load.ts to read.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  -- `H:Name: value` arguments are request fields sent with every request; the others are paths.
  paths = {}
  fields = {}
  for _, arg in ipairs(args) do
    local name, value = string.match(arg, "^H:([^:]+):%s*(.*)$")
    if name then fields[name] = value else table.insert(paths, arg) end
  end
  next_path = 1
  statuses = {}
end

function request()
  local path = paths[next_path]
  next_path = next_path % #paths + 1
  return wrk.format("GET", path, fields)
end

function response(status)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency)
  local total = {}
  for _, thread in ipairs(threads) do
    for status, count in pairs(thread:get("statuses")) do
      total[status] = (total[status] or 0) + count
    end
  end
  local counts = {}
  for status, count in pairs(total) do
    table.insert(counts, string.format('"%d":%d', status, count))
  end
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"statuses":{%s},"errors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    table.concat(counts, ","), e.connect + e.read + e.write, e.timeout))
end
