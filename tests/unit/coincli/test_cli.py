"""coin-cli: argument conversion, output, errors and exit codes (coincli).

The node does not exist yet, so the transport function is replaced by a
double that records requests and plays back answers taken from the reference
node's recordings; the expected outputs are those recordings' (cli_* files).
End-to-end runs against a real coind come with the daemon.
"""

from __future__ import annotations

import io
import os
import socket
from typing import NamedTuple

from twisted.trial.unittest import SynchronousTestCase

from coincli import jsonfmt, transport
from coincli.client import split_host_port, uri_encode
from coincli.convert import CONVERT_PARAMS, convert_named, convert_positional, parse_json_arg
from coincli.errors import CliError, ConnectionFailed
from coincli.jsonfmt import RawNumber
from coincli.main import run

# getblockchaininfo as the reference node answered it, and coin-cli's output (cli_01).
BLOCKCHAININFO = (
    '{"chain":"regtest","blocks":111,"headers":111,"bestblockhash":"00005f929eb3d4ec5210d0f4c'
    'aad44cf8f76e99001c2c90c5f6f0a60f278daf2","difficulty":{"proof-of-work":2.464473435555347'
    'e-05,"proof-of-stake":4.656542373906925e-10},"mediantime":1795643696,"verificationprogres'
    's":1,"initialblockdownload":false,"chainwork":"0000000000000000000000000000000000000000000'
    '000000000000000043c53","size_on_disk":33531,"softforks":[{"id":"bip34","version":2,"rejec'
    't":{"status":false}},{"id":"bip66","version":3,"reject":{"status":true}},{"id":"bip65","v'
    'ersion":4,"reject":{"status":true}}],"bip9_softforks":{"csv":{"status":"defined","startTi'
    'me":1462060800,"timeout":1493596800,"since":0},"segwit":{"status":"defined","startTime":1'
    '479168000,"timeout":1510704000,"since":0}},"warnings":""}')
BLOCKCHAININFO_OUT = """\
{
  "chain": "regtest",
  "blocks": 111,
  "headers": 111,
  "bestblockhash": "00005f929eb3d4ec5210d0f4caad44cf8f76e99001c2c90c5f6f0a60f278daf2",
  "difficulty": {
    "proof-of-work": 2.464473435555347e-05,
    "proof-of-stake": 4.656542373906925e-10
  },
  "mediantime": 1795643696,
  "verificationprogress": 1,
  "initialblockdownload": false,
  "chainwork": "0000000000000000000000000000000000000000000000000000000000043c53",
  "size_on_disk": 33531,
  "softforks": [
    {
      "id": "bip34",
      "version": 2,
      "reject": {
        "status": false
      }
    },
    {
      "id": "bip66",
      "version": 3,
      "reject": {
        "status": true
      }
    },
    {
      "id": "bip65",
      "version": 4,
      "reject": {
        "status": true
      }
    }
  ],
  "bip9_softforks": {
    "csv": {
      "status": "defined",
      "startTime": 1462060800,
      "timeout": 1493596800,
      "since": 0
    },
    "segwit": {
      "status": "defined",
      "startTime": 1479168000,
      "timeout": 1510704000,
      "since": 0
    }
  },
  "warnings": ""
}
"""
NETWORKINFO = (
    '{"version":2030000,"subversion":"/coin:2.3.0/","protocolversion":70008,"localservices":"0'
    '00000000100040d","localrelay":true,"timeoffset":0,"networkactive":true,"connections":0,"n'
    'etworks":[{"name":"ipv4","limited":false,"reachable":true,"proxy":"","proxy_randomize_cre'
    'dentials":false}],"relayfee":0.01000,"incrementalfee":0.01000,"localaddresses":[],"warnin'
    'gs":""}')
WALLETINFO = (
    '{"walletname":"","walletversion":159900,"balance":13702520735.99576,"unconfirmed_balance"'
    ':0.00000,"immature_balance":472583160.00000,"txcount":117,"keypoololdest":1795579433,"key'
    'poolsize":1000,"keypoolsize_hd_internal":1000,"paytxfee":0.00000,"hdmasterkeyid":"72dd822'
    '76088f5b4a2afb104ed52db7d5fe36bb9"}')
GETINFO_OUT = """\
{
  "version": 2030000,
  "protocolversion": 70008,
  "walletversion": %s,
  "balance": %s,
  "blocks": 111,
  "timeoffset": 0,
  "connections": 0,
  "proxy": "",
  "difficulty": {
    "proof-of-work": 2.464473435555347e-05,
    "proof-of-stake": 4.656542373906925e-10
  },
  "testnet": false,
  "keypoololdest": %s,
  "keypoolsize": %s,
  "paytxfee": %s,
  "relayfee": 0.01000,
  "warnings": ""
}
"""
WALLET_NOT_SPECIFIED = ("Wallet file not specified (must request wallet RPC through "
                        "/wallet/<filename> uri-path).")


class Call(NamedTuple):
    host: str
    port: int
    path: str
    authorization: str
    body: bytes
    timeout: float | None


class FakePost:
    """Stands in for coincli.transport.post: records each request, plays back answers."""

    def __init__(self, answers: list) -> None:
        self.answers = list(answers)
        self.calls: list[Call] = []

    def __call__(self, *args) -> tuple[int, bytes]:
        self.calls.append(Call(*args))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def ok(result: str, id: int = 1) -> tuple[int, bytes]:
    return 200, b'{"result":%s,"error":null,"id":%d}\n' % (result.encode(), id)


def fail(code: int, message: str, status: int = 500) -> tuple[int, bytes]:
    return status, (b'{"result":null,"error":{"code":%d,"message":%s},"id":1}\n'
                    % (code, jsonfmt.dumps(message).encode()))


class Result(NamedTuple):
    status: int
    out: str
    err: str
    calls: list[Call]
    sleeps: list[float]


class CliTestCase(SynchronousTestCase):
    """Runs coin-cli in-process over a fresh datadir (and HOME), with FakePost."""

    def setUp(self) -> None:
        self.home = os.path.abspath(self.mktemp())
        self.base = os.path.join(self.home, ".coin")
        os.makedirs(os.path.join(self.base, "regtest"))

    def cli(self, argv: list[str], *answers, stdin: bytes = b"",
            credentials: bool = True) -> Result:
        prefix = ["-regtest", "-datadir=" + self.base]
        if credentials:
            prefix += ["-rpcuser=u", "-rpcpassword=p"]
        post = FakePost(list(answers))
        sleeps: list[float] = []
        out, err = io.BytesIO(), io.BytesIO()
        status = run(prefix + argv, io.BytesIO(stdin), out, err, post=post,
                     sleep=sleeps.append, environ={"HOME": self.home})
        return Result(status, out.getvalue().decode(), err.getvalue().decode(), post.calls,
                      sleeps)

    def assertOutput(self, result: Result, status: int, out: str = "", err: str = "") -> None:
        self.assertEqual((result.status, result.out, result.err), (status, out, err))


class OutputTests(CliTestCase):
    """Only the result is printed: strings raw, numbers as sent, JSON in UniValue's layout."""

    def test_object_like_reference(self) -> None:
        self.assertOutput(self.cli(["getblockchaininfo"], ok(BLOCKCHAININFO)), 0,
                          BLOCKCHAININFO_OUT)

    def test_scalars(self) -> None:
        cases = [('"00005f92"', "00005f92\n"), ("111", "111\n"), ("13702520735.99576",
                 "13702520735.99576\n"), ("true", "true\n"), ("0.00000000", "0.00000000\n"),
                 ('"two\\nlines \\u00e9"', "two\nlines \u00e9\n")]
        for result, out in cases:
            self.assertOutput(self.cli(["m"], ok(result)), 0, out)

    def test_null_and_empty_string_print_nothing(self) -> None:
        self.assertOutput(self.cli(["setban", "10.0.0.1", "add"], ok("null")), 0)
        self.assertOutput(self.cli(["m"], ok('""')), 0)

    def test_numbers_keep_their_text(self) -> None:
        self.assertOutput(self.cli(["getmempoolinfo"], ok(
            '{"size":1,"mempoolminfee":0.01000,"x":1E+2,"y":-0.0}')), 0,
            '{\n  "size": 1,\n  "mempoolminfee": 0.01000,\n  "x": 1E+2,\n  "y": -0.0\n}\n')

    def test_empty_containers(self) -> None:
        self.assertOutput(self.cli(["listbanned"], ok("[]")), 0, "[\n]\n")
        self.assertOutput(self.cli(["gobject", "list"], ok("{}")), 0, "{\n}\n")
        self.assertOutput(self.cli(["m"], ok('{"tx":[],"o":{}}')), 0,
                          '{\n  "tx": [\n  ],\n  "o": {\n  }\n}\n')

    def test_string_escapes_inside_json(self) -> None:
        self.assertOutput(self.cli(["m"], ok('["q\\"b\\\\/\\u0001\\u007f\\t\u00e9\u20ac"]')), 0,
                          '[\n  "q\\"b\\\\/\\u0001\\u007f\\t\u00e9\u20ac"\n]\n')

    def test_compact_writer(self) -> None:
        self.assertEqual(jsonfmt.dumps({"a": [1, True, None, RawNumber("1.50")], "b": {}}),
                         '{"a":[1,true,null,1.50],"b":{}}')


class ErrorTests(CliTestCase):
    """RPC errors go to stderr with the code as exit status (mod 256); others exit 1."""

    def test_rpc_error(self) -> None:
        self.assertOutput(self.cli(["getblockhash", "-1"], fail(-8, "Block height out of range")),
                          8, err="error code: -8\nerror message:\nBlock height out of range\n")

    def test_exit_status_is_the_code_mod_256(self) -> None:
        self.assertOutput(self.cli(["nosuchmethod"], fail(-32601, "Method not found", 404)), 89,
                          err="error code: -32601\nerror message:\nMethod not found\n")
        self.assertEqual(self.cli(["masternode", "status"],
                                  fail(-32603, "This is not a masternode")).status, 91)
        result = self.cli(["m"], fail(-256, "x"))
        self.assertOutput(result, 0, err="error code: -256\nerror message:\nx\n")

    def test_multiline_message(self) -> None:
        message = "getblockhash height\n\nReturns hash of block\n"
        self.assertOutput(self.cli(["getblockhash"], fail(-1, message)), 1,
                          err="error code: -1\nerror message:\n" + message + "\n")

    def test_wallet_not_specified_hint(self) -> None:
        self.assertOutput(self.cli(["getwalletinfo"], fail(-19, WALLET_NOT_SPECIFIED)), 19,
                          err="error code: -19\nerror message:\n" + WALLET_NOT_SPECIFIED
                          + '\nTry adding "-rpcwallet=<filename>" option to coin-cli command '
                            "line.\n")

    def test_http_statuses(self) -> None:
        cases = [
            ((401, b""), "Authorization failed: Incorrect rpcuser or rpcpassword"),
            ((403, b""), "server returned HTTP error 403"),
            ((405, b"JSONRPC server handles only POST requests"),
             "server returned HTTP error 405"),
            ((503, b"x"), "server returned HTTP error 503"),
            ((404, b""), "no response from server"),
            ((500, b"Work queue depth exceeded"), "couldn't parse reply from server"),
            ((200, b"\xff"), "couldn't parse reply from server"),
            ((200, b"NaN"), "couldn't parse reply from server"),
            ((200, b"[1]"), "JSON value is not an object as expected"),
            ((200, b"{}"), "expected reply to have result, error and id properties"),
            ((500, b'{"error":{"code":"x"}}'), "JSON value is not an integer as expected"),
        ]
        for answer, message in cases:
            self.assertOutput(self.cli(["getblockcount"], answer), 1,
                              err="error: %s\n" % message)

    def test_json_argument_error(self) -> None:
        result = self.cli(["getblockhash", "abc"])
        self.assertOutput(result, 1, err="error: Error parsing JSON:abc\n")
        self.assertEqual(result.calls, [])

    def test_no_credentials(self) -> None:
        self.assertOutput(self.cli(["getblockcount"], credentials=False), 1, err=(
            "error: Could not locate RPC credentials. No authentication cookie could be found, "
            "and RPC password is not set.  See -rpcpassword and -stdinrpcpass.  Configuration "
            "file: (%s/coin.conf)\n" % self.base))

    def test_connection_failure(self) -> None:
        failure = ConnectionFailed("Could not connect to the server 127.0.0.1:28499\n\nMake "
                                   "sure the coind server is running and that you are connecting "
                                   "to the correct RPC port.")
        self.assertOutput(self.cli(["getblockcount"], failure), 1, err="error: %s\n" % failure)

    def test_too_few_parameters(self) -> None:
        self.assertOutput(self.cli([]), 1, err="error: too few parameters (need at least "
                                               "command)\n")

    def test_option_errors(self) -> None:
        self.assertOutput(self.cli(["-foo", "getblockcount"]), 1,
                          err="Error parsing command line arguments: Invalid parameter -foo\n")
        self.assertOutput(self.cli(["-testnet", "getblockcount"]), 1,
                          err="Error: Invalid combination of -regtest, -testnet and -chain. Can "
                              "use at most one.\n")
        self.assertOutput(self.cli(["-rpcport=0", "getblockcount"]), 1,
                          err="error: Invalid port provided in -rpcport: 0\n")
        missing = os.path.join(self.home, "missing")
        self.assertOutput(self.cli(["-datadir=" + missing, "getblockcount"]), 1,
                          err='Error: Specified data directory "%s" does not exist.\n' % missing)

    def test_server_options_are_unknown_to_the_cli(self) -> None:
        """coin.conf is shared: coind's keys there are ignored, on the command line refused."""
        with open(os.path.join(self.base, "coin.conf"), "w") as f:
            f.write("server=1\ntxindex=1\n")
        self.assertEqual(self.cli(["getblockcount"], ok("1")).status, 0)
        self.assertEqual(self.cli(["-txindex", "getblockcount"]).status, 1)


class RequestTests(CliTestCase):
    """What goes on the wire: body, path, host, port, credentials, timeout."""

    def test_request(self) -> None:
        call, = self.cli(["getblockhash", "5"], ok('"h"')).calls
        self.assertEqual(call, Call("127.0.0.1", 31931, "/", "Basic dTpw",
                                    b'{"method":"getblockhash","params":[5],"id":1}\n', 900))

    def test_conversions(self) -> None:
        calls = self.cli(["getblock", "00ab", "0"], ok("1")).calls
        self.assertEqual(calls[0].body, b'{"method":"getblock","params":["00ab",0],"id":1}\n')
        calls = self.cli(["sendtoaddress", "addr", "0.10000000", "c", "d", "true"], ok("1")).calls
        self.assertEqual(calls[0].body, b'{"method":"sendtoaddress","params":["addr",0.10000000,'
                                        b'"c","d",true],"id":1}\n')
        calls = self.cli(["createrawtransaction", '[{"txid":"ab","vout":0}]', '{"a":1e-8}'],
                         ok("1")).calls
        self.assertEqual(calls[0].body, b'{"method":"createrawtransaction","params":[[{"txid":'
                                        b'"ab","vout":0}],{"a":1e-8}],"id":1}\n')

    def test_named(self) -> None:
        calls = self.cli(["-named", "getblock", "blockhash=00ab", "verbosity=0", "x=a=b"],
                         ok("1")).calls
        self.assertEqual(calls[0].body, b'{"method":"getblock","params":{"blockhash":"00ab",'
                                        b'"verbosity":0,"x":"a=b"},"id":1}\n')
        self.assertOutput(self.cli(["-named", "getblockhash", "5"]), 1, err=(
            "error: No '=' in named argument '5', this needs to be present for every argument "
            "(even if it is empty)\n"))

    def test_unicode_arguments(self) -> None:
        calls = self.cli(["setlabel", "\u00e9\"\n"], ok("null")).calls
        self.assertEqual(calls[0].body, '{"method":"setlabel","params":["\u00e9\\"\\n"],"id":1}\n'
                         .encode())

    def test_wallet_paths(self) -> None:
        for option, path in [([], "/"), (["-rpcwallet="], "/wallet/"),
                             (["-rpcwallet"], "/wallet/"), (["-rpcwallet=w2"], "/wallet/w2"),
                             (["-rpcwallet=my w/\u00e9~"], "/wallet/my%20w%2F%C3%A9~"),
                             (["-rpcwallet=x", "-norpcwallet"], "/")]:
            self.assertEqual(self.cli(option + ["getwalletinfo"], ok("1")).calls[0].path, path)

    def test_host_and_port(self) -> None:
        cases = [([], ("127.0.0.1", 31931)), (["-rpcport=28443"], ("127.0.0.1", 28443)),
                 (["-rpcconnect=10.0.0.1:9"], ("10.0.0.1", 9)),
                 (["-rpcconnect=10.0.0.1:9", "-rpcport=7"], ("10.0.0.1", 7)),
                 (["-rpcconnect=node.example"], ("node.example", 31931)),
                 (["-rpcconnect=[::1]:5"], ("::1", 5)), (["-rpcconnect=::1"], ("::1", 31931))]
        for option, expected in cases:
            call = self.cli(option + ["getblockcount"], ok("1")).calls[0]
            self.assertEqual((call.host, call.port), expected)

    def test_network_default_ports(self) -> None:
        argv = ["-datadir=" + self.base, "-rpcpassword=p", "getblockcount"]
        for chain, port in [("main", 11931), ("test", 21931), ("regtest", 31931)]:
            post = FakePost([ok("1")])
            run(["-chain=" + chain] + argv, io.BytesIO(), io.BytesIO(), io.BytesIO(), post=post,
                environ={})
            self.assertEqual(post.calls[0].port, port)

    def test_split_host_port(self) -> None:
        for text, expected in [("h:0", ("h:0", 1)), ("h:65536", ("h:65536", 1)),
                               ("h:x", ("h:x", 1)), (":5", ("", 5)), ("[a:b]", ("a:b", 1)),
                               ("a:b:5", ("a:b:5", 1))]:
            self.assertEqual(split_host_port(text, 1), expected)

    def test_uri_encode(self) -> None:
        self.assertEqual(uri_encode("Az09-._~ %/"), "Az09-._~%20%25%2F")

    def test_timeout(self) -> None:
        self.assertIsNone(self.cli(["-rpcclienttimeout=0", "m"], ok("1")).calls[0].timeout)
        self.assertEqual(self.cli(["-rpcclienttimeout=5", "m"], ok("1")).calls[0].timeout, 5)

    def test_cookie(self) -> None:
        with open(os.path.join(self.base, "regtest", ".cookie"), "w") as f:
            f.write("__cookie__:secret\n")
        call = self.cli(["getblockcount"], ok("1"), credentials=False).calls[0]
        self.assertEqual(call.authorization, "Basic X19jb29raWVfXzpzZWNyZXQ=")
        call = self.cli(["-rpcuser=ignored", "getblockcount"], ok("1"), credentials=False).calls[0]
        self.assertEqual(call.authorization, "Basic X19jb29raWVfXzpzZWNyZXQ=")
        call = self.cli(["getblockcount"], ok("1")).calls[0]
        self.assertEqual(call.authorization, "Basic dTpw")

    def test_cookie_file_option(self) -> None:
        with open(os.path.join(self.base, "regtest", "my.cookie"), "w") as f:
            f.write("__cookie__:x")
        call = self.cli(["-rpccookiefile=my.cookie", "m"], ok("1"), credentials=False).calls[0]
        self.assertEqual(call.authorization, "Basic X19jb29raWVfXzp4")

    def test_credentials_from_coin_conf(self) -> None:
        with open(os.path.join(self.base, "coin.conf"), "w") as f:
            f.write("rpcuser=alice\n[regtest]\nrpcpassword=alicepw\nrpcport=28443\n")
        call = self.cli(["getblockcount"], ok("111"), credentials=False).calls[0]
        self.assertEqual((call.authorization, call.port), ("Basic YWxpY2U6YWxpY2Vwdw==", 28443))


class StdinTests(CliTestCase):

    def test_stdin_arguments(self) -> None:
        call = self.cli(["-stdin", "getblockhash"], ok('"h"'), stdin=b"5\n").calls[0]
        self.assertEqual(call.body, b'{"method":"getblockhash","params":[5],"id":1}\n')
        call = self.cli(["-stdin"], ok("1"), stdin=b"walletpassphrase\npass word\r\n60").calls[0]
        self.assertEqual(call.body, b'{"method":"walletpassphrase","params":["pass word\\r",60],'
                                    b'"id":1}\n')

    def test_empty_stdin_sends_no_arguments(self) -> None:
        call = self.cli(["-stdin", "getblockhash"], fail(-1, "usage")).calls[0]
        self.assertEqual(call.body, b'{"method":"getblockhash","params":[],"id":1}\n')

    def test_stdinrpcpass(self) -> None:
        call = self.cli(["-rpcuser=u", "-stdinrpcpass", "-stdin", "getblockhash"], ok("1"),
                        stdin=b"p\n7\n", credentials=False).calls[0]
        self.assertEqual(call.authorization, "Basic dTpw")
        self.assertEqual(call.body, b'{"method":"getblockhash","params":[7],"id":1}\n')
        self.assertOutput(self.cli(["-stdinrpcpass", "m"], credentials=False), 1,
                          err="error: -stdinrpcpass specified but failed to read from standard "
                              "input\n")


class RpcWaitTests(CliTestCase):

    def test_waits_for_connection_and_warmup(self) -> None:
        result = self.cli(["-rpcwait", "getblockcount"], ConnectionFailed("down"),
                          fail(-28, "Verifying wallet(s)..."), ok("111"))
        self.assertOutput(result, 0, "111\n")
        self.assertEqual((len(result.calls), result.sleeps), (3, [1, 1]))

    def test_other_errors_end_the_wait(self) -> None:
        self.assertOutput(self.cli(["-rpcwait", "m"], (401, b"")), 1,
                          err="error: Authorization failed: Incorrect rpcuser or rpcpassword\n")

    def test_without_rpcwait_warmup_is_an_error(self) -> None:
        self.assertOutput(self.cli(["getblockcount"], fail(-28, "Loading block index...")), 28,
                          err="error code: -28\nerror message:\nLoading block index...\n")


class GetInfoTests(CliTestCase):

    def batch(self, walletinfo: str) -> tuple[int, bytes]:
        return 200, ("[%s,%s,%s]" % (
            '{"result":%s,"error":null,"id":0}' % NETWORKINFO,
            '{"result":%s,"error":null,"id":1}' % BLOCKCHAININFO, walletinfo)).encode()

    def test_getinfo(self) -> None:
        result = self.cli(["-getinfo"], self.batch('{"result":%s,"error":null,"id":2}'
                                                   % WALLETINFO))
        self.assertOutput(result, 0, GETINFO_OUT % ("159900", "13702520735.99576", "1795579433",
                                                    "1000", "0.00000"))
        self.assertEqual(result.calls[0].body, (
            b'[{"method":"getnetworkinfo","params":null,"id":0},'
            b'{"method":"getblockchaininfo","params":null,"id":1},'
            b'{"method":"getwalletinfo","params":null,"id":2}]\n'))

    def test_wallet_error_gives_nulls(self) -> None:
        wallet = '{"result":null,"error":{"code":-19,"message":"x"},"id":2}'
        self.assertOutput(self.cli(["-getinfo"], self.batch(wallet)), 0,
                          GETINFO_OUT % (("null",) * 5))

    def test_unlocked_until(self) -> None:
        wallet = '{"result":{"unlocked_until":0},"error":null,"id":2}'
        self.assertIn('  "unlocked_until": 0,\n  "paytxfee": null,\n',
                      self.cli(["-getinfo"], self.batch(wallet)).out)

    def test_node_errors_pass_through(self) -> None:
        answer = (500, b'[{"result":null,"error":{"code":-28,"message":"Loading"},"id":0}]')
        self.assertOutput(self.cli(["-getinfo"], answer), 28,
                          err="error code: -28\nerror message:\nLoading\n")

    def test_bad_batches(self) -> None:
        for body, message in [(b"{}", "Batch must be an array"),
                              (b"[1]", "Batch member must be object"),
                              (b'[{"id":3}]', "Batch member id larger than size")]:
            self.assertOutput(self.cli(["-getinfo"], (200, body)), 1, err="error: %s\n" % message)

    def test_takes_no_arguments(self) -> None:
        self.assertOutput(self.cli(["-getinfo", "x"]), 1,
                          err="error: -getinfo takes no arguments\n")


class HelpTests(SynchronousTestCase):

    def run_cli(self, argv: list[str]) -> tuple[int, str, str]:
        out, err = io.BytesIO(), io.BytesIO()
        status = run(argv, io.BytesIO(), out, err, post=FakePost([]), environ={})
        return status, out.getvalue().decode(), err.getvalue().decode()

    def test_help(self) -> None:
        for flag in ("-?", "-h", "-help", "--help"):
            status, out, err = self.run_cli([flag])
            self.assertEqual((status, err), (0, ""))
            self.assertTrue(out.startswith("Coin Core RPC client version v"))
            self.assertIn("\nUsage:  coin-cli [options] <command> [params]", out)
            self.assertIn("\n  -rpcwallet=<walletname>\n", out)
            self.assertNotIn("-regtest", out)

    def test_version(self) -> None:
        import coin
        self.assertEqual(self.run_cli(["-version"]),
                         (0, "Coin Core RPC client version v%s\n" % coin.__version__, ""))

    def test_no_arguments(self) -> None:
        status, out, err = self.run_cli([])
        self.assertEqual((status, err), (1, "Error: too few parameters\n"))
        self.assertIn("Usage:", out)


class ConvertTests(SynchronousTestCase):

    def test_parse_json_arg(self) -> None:
        self.assertEqual(parse_json_arg("5"), "5")
        self.assertIsInstance(parse_json_arg("5"), RawNumber)
        self.assertEqual(parse_json_arg(' "s" '), "s")
        self.assertNotIsInstance(parse_json_arg('"5"'), RawNumber)
        self.assertIsNone(parse_json_arg("null"))
        self.assertIs(parse_json_arg("false"), False)
        self.assertEqual(parse_json_arg('{"a":[1]}'), {"a": ["1"]})
        for bad in ("", "1,2", "abc", "01", "NaN", "Infinity", "+1", "[", "1]", "'a'"):
            error = self.assertRaises(CliError, parse_json_arg, bad)
            self.assertEqual(str(error), "Error parsing JSON:" + bad)

    def test_positional_and_named(self) -> None:
        self.assertEqual(convert_positional("gettxout", ["ab", "1", "true"]), ["ab", "1", True])
        self.assertEqual(convert_positional("unknownmethod", ["1"]), ["1"])
        self.assertEqual(convert_named("gettxout", ["txid=ab", "n=1", "n=2"]),
                         {"txid": "ab", "n": "2"})

    def test_table(self) -> None:
        """The methods the issue lists are covered, and no (method, position) has two names
        except getblock's verbosity/verbose alias."""
        entries = {(m, i, n) for m, i, n in CONVERT_PARAMS}
        for entry in [("getblockhash", 0, "height"), ("getblock", 1, "verbosity"),
                      ("getblockheader", 1, "verbose"), ("gettxout", 1, "n"),
                      ("gettxout", 2, "include_mempool"), ("getrawtransaction", 1, "verbose"),
                      ("createrawtransaction", 2, "locktime"), ("generatetoaddress", 2,
                      "maxtries"), ("generate", 0, "nblocks"), ("waitfornewblock", 0, "timeout"),
                      ("waitforblock", 1, "timeout"), ("waitforblockheight", 1, "timeout"),
                      ("getchaintxstats", 0, "nblocks"), ("verifychain", 1, "nblocks"),
                      ("setmocktime", 0, "timestamp"), ("createmultisig", 1, "keys"),
                      ("sendrawtransaction", 1, "allowhighfees"), ("getnetworkhashps", 1,
                      "height"), ("logging", 1, "exclude"), ("getblocktemplate", 0,
                      "template_request"), ("prioritisetransaction", 2, "fee_delta"),
                      ("estimatesmartfee", 0, "conf_target"), ("getmempoolancestors", 1,
                      "verbose"), ("getrawmempool", 0, "verbose"), ("sendtoaddress", 1,
                      "amount"), ("sendmany", 1, "amounts"), ("listunspent", 2, "addresses"),
                      ("setban", 2, "bantime")]:
            self.assertIn(entry, entries)
        self.assertEqual(len(entries), len(CONVERT_PARAMS))
        names: dict = {}
        for method, index, name in CONVERT_PARAMS:
            names.setdefault((method, index), set()).add(name)
        clashes = {key: value for key, value in names.items() if len(value) > 1}
        self.assertEqual(clashes, {("getblock", 1): {"verbosity", "verbose"}})


class TransportTests(SynchronousTestCase):
    """The HTTP framing; network failure against a local port nobody listens on."""

    def test_build_request(self) -> None:
        self.assertEqual(transport.build_request("127.0.0.1", "/wallet/w", "Basic dTpw", b"{}\n"),
                         b"POST /wallet/w HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                         b"Authorization: Basic dTpw\r\nContent-Length: 3\r\n\r\n{}\n")

    def test_parse_response(self) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        self.assertEqual(transport.parse_response(head + b"Content-Length: 3\r\n\r\n123456"),
                         (200, b"123"))
        self.assertEqual(transport.parse_response(
            head + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n"),
            (200, b"abcde"))
        self.assertEqual(transport.parse_response(b"HTTP/1.0 404 Not Found\r\n\r\nrest"),
                         (404, b"rest"))
        for bad in (b"", b"garbage\r\n\r\n", head, head + b"Content-Length: 9\r\n\r\nabc",
                    head + b"Transfer-Encoding: chunked\r\n\r\n9\r\nab"):
            self.assertRaises(ValueError, transport.parse_response, bad)

    def test_connection_refused(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        error = self.assertRaises(ConnectionFailed, transport.post, "127.0.0.1", port, "/",
                                  "Basic x", b"{}", 5)
        self.assertEqual(str(error), "Could not connect to the server 127.0.0.1:%d\n\nMake sure "
                                     "the coind server is running and that you are connecting "
                                     "to the correct RPC port." % port)
