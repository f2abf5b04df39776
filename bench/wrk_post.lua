-- JSON-RPC POSTs with basic authentication, for bench/rpc.py.
--
--   wrk -t1 -c8 -d2s -s bench/wrk_post.lua http://127.0.0.1:<port>/ -- "<Authorization>" <method> [<top height>]
--
-- <method> "getblockhash" cycles through heights 0..<top height>; any other method is
-- sent without parameters. The requests are formatted once, in init(). done() prints
-- one line "WRKJSON {...}" (times in microseconds) for the caller to parse.

local prepared = {}
local counter = 0

function init(args)
  local authorization, method, top = args[1], args[2], tonumber(args[3] or "0")
  local headers = {["Authorization"] = authorization, ["Content-Type"] = "text/plain"}
  if method == "getblockhash" then
    for height = 0, top do
      prepared[#prepared + 1] = wrk.format("POST", "/", headers,
        string.format('{"method":"getblockhash","params":[%d],"id":1}', height))
    end
  else
    prepared[1] = wrk.format("POST", "/", headers,
      string.format('{"method":"%s","params":[],"id":1}', method))
  end
end

function request()
  counter = counter + 1
  return prepared[(counter % #prepared) + 1]
end

function done(summary, latency, per_thread)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"status_errors":%d,' ..
    '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
