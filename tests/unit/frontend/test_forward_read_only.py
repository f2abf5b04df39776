"""Which forwarded requests a front end may send to the writer twice."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from coin.frontend.forward import read_only


class ReadOnlyTests(SynchronousTestCase):
    def test_rest_and_reading_calls(self) -> None:
        self.assertTrue(read_only(b"GET", b"/rest/mempool/info.json", b""))
        self.assertTrue(read_only(b"POST", b"/rest/getutxos.bin", b"\x00"))
        self.assertTrue(read_only(b"POST", b"/", b'{"method":"getmempoolinfo","id":1}'))
        self.assertTrue(read_only(b"POST", b"/wallet/w", b'[{"method":"getbalance"},'
                                                       b'{"method":"getblockcount"}]'))

    def test_calls_that_may_change_something_or_are_not_calls(self) -> None:
        for body in (b'{"method":"sendrawtransaction","params":["00"]}',
                     b'[{"method":"getblockcount"},{"method":"getnewaddress"}]',
                     b'{"method":["getblockcount"]}', b'[]', b'{"method":', b'7'):
            self.assertFalse(read_only(b"POST", b"/", body), body)
