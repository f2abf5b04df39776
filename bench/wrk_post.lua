-- JSON-RPC POSTs with basic authentication, for bench/rpc.py.
--
--   wrk -t1 -c8 -d2s -s bench/wrk_post.lua http://127.0.0.1:<port>/ -- "<Authorization>" <method> [<top height>] [fresh]
--
-- <method> "getblockhash" cycles through heights 0..<top height>; any other method is
-- sent without parameters. By default the requests are formatted once, in init(), all
-- with id 1 (the same bytes again and again); with "fresh" every request carries a new id
-- (1, 2, 3...), as real clients send (python-bitcoinrpc, bitcoin-core on npm), and is
-- formatted when sent. done() prints one line "WRKJSON {...}" (times in microseconds) for
-- the caller to parse.

local prepared = {}
local bodies = {}
local headers = {}
local fresh = false
local counter = 0

function init(args)
  local authorization, method, top = args[1], args[2], tonumber(args[3] or "0")
  fresh = args[4] == "fresh"
  headers = {["Authorization"] = authorization, ["Content-Type"] = "text/plain"}
  if method == "getblockhash" then
    for height = 0, top do
      bodies[#bodies + 1] = string.format('{"method":"getblockhash","params":[%d],"id":', height)
    end
  else
    bodies[1] = string.format('{"method":"%s","params":[],"id":', method)
  end
  for i = 1, #bodies do
    prepared[i] = wrk.format("POST", "/", headers, bodies[i] .. "1}")
  end
end

function request()
  counter = counter + 1
  local i = (counter % #prepared) + 1
  if fresh then
    return wrk.format("POST", "/", headers, bodies[i] .. counter .. "}")
  end
  return prepared[i]
end

function done(summary, latency, per_thread)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"status_errors":%d,' ..
    '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
