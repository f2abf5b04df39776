"""Each network's genesis block, rebuilt from its parameters (design.md §2)."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import COIN, MAIN, REGTEST, TEST, build_genesis, get_params
from coin.primitives.block import Block
from coin.primitives.hashes import hash_to_hex, sha256d

#: name -> (message, time, nonce, bits, block hash, merkle root), hashes in RPC order.
GENESIS = {
    "main": (b"coin 25/Nov/2026 A node that never loses your data",
             1795996800, 1575768, 0x1E0FFFF0,
             "00000ab43d35e9fec67d18852cbc8acffb7a8673bcdbf5fe9c1cc9faf738b3c4",
             "3f2e883c32710cfbe2b31951c68c7d4e77e78d0c0fce5c8e7ccf633943244b38"),
    "test": (b"coin testnet 25/Nov/2026",
             1795996801, 1548468, 0x1E0FFFF0,
             "00000659b05c97cb3b307c3726e37a87a47374dd2afccfc52d228c1126545cbd",
             "c20c479a9fb30fbe72bca405789f472714cbc34ca747212d5ee8263d1d3a1e0f"),
    "regtest": (b"The Times 03/Jan/2009 Chancellor on brink of second bailout for banks",
                1296688602, 2, 0x207FFFFF,
                "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206",
                "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b"),
}

#: Bitcoin's regtest genesis block, byte for byte.
REGTEST_GENESIS_HEX = (
    "0100000000000000000000000000000000000000000000000000000000000000000000003ba3edfd"
    "7a7b12b27ac72c3e67768f617fc81bc3888a51323a9fb8aa4b1e5e4adae5494dffff7f2002000000"
    "0101000000010000000000000000000000000000000000000000000000000000000000000000ffff"
    "ffff4d04ffff001d0104455468652054696d65732030332f4a616e2f32303039204368616e63656c"
    "6c6f72206f6e206272696e6b206f66207365636f6e64206261696c6f757420666f722062616e6b73"
    "ffffffff0100f2052a01000000434104678afdb0fe5548271967f1a67130b7105cd6a828e03909a6"
    "7962e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5f"
    "ac00000000")


def compact_to_target(bits: int) -> int:
    """Core's arith_uint256::SetCompact for non-negative, non-overflowing bits."""
    size, word = bits >> 24, bits & 0x007FFFFF
    assert not bits & 0x00800000, "negative compact target"
    if size <= 3:
        return word >> (8 * (3 - size))
    return word << (8 * (size - 3))


class GenesisTests(SynchronousTestCase):

    def check_network(self, name):
        params = get_params(name)
        message, time, nonce, bits, block_hash, merkle = GENESIS[name]
        rebuilt = build_genesis(message, time, nonce, bits)
        genesis = params.genesis
        self.assertEqual(rebuilt.serialize(), genesis.serialize(), name)
        self.assertEqual(genesis.hash_hex, block_hash, name)
        self.assertEqual(hash_to_hex(genesis.header.merkle_root), merkle, name)
        self.assertEqual(genesis.compute_merkle_root(), (genesis.header.merkle_root, False))
        header = genesis.header
        self.assertEqual((header.version, header.time, header.nonce, header.bits),
                         (1, time, nonce, bits), name)
        self.assertEqual(header.prev_hash, b"\x00" * 32)
        self.assertEqual(header.hash, sha256d(header.serialize()))
        # one coinbase paying the 50-coin subsidy
        self.assertEqual(len(genesis.txs), 1)
        self.assertTrue(genesis.txs[0].is_coinbase())
        self.assertEqual(genesis.txs[0].total_out(), 50 * COIN)
        self.assertIn(message, genesis.txs[0].vin[0].script_sig)
        # it survives the wire
        parsed = Block.deserialize(genesis.serialize())
        self.assertEqual(parsed.hash, genesis.hash)
        self.assertEqual(parsed.serialize(), genesis.serialize())

    def check_pow(self, params):
        header = params.genesis.header
        target = compact_to_target(header.bits)
        self.assertGreater(target, 0)
        self.assertLessEqual(target, params.pow_limit)
        self.assertLessEqual(int.from_bytes(header.hash, "little"), target, params.name)
        self.assertLessEqual(compact_to_target(params.pow_limit_bits), params.pow_limit)

    def test_main(self):
        self.check_network("main")
        self.assertEqual(MAIN.genesis.header.bits, 0x1E0FFFF0)
        self.check_pow(MAIN)

    def test_test(self):
        self.check_network("test")
        self.check_pow(TEST)

    def test_regtest(self):
        self.check_network("regtest")
        self.check_pow(REGTEST)

    def test_regtest_is_bitcoins(self):
        raw = bytes.fromhex(REGTEST_GENESIS_HEX)
        self.assertEqual(REGTEST.genesis.serialize(), raw)
        self.assertEqual(REGTEST.genesis.hash_hex,
                         "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206")
        self.assertEqual(hash_to_hex(REGTEST.genesis.header.merkle_root),
                         "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b")
        self.assertEqual(REGTEST.genesis.txs[0].txid_hex,
                         "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b")

    def test_genesis_hashes_distinct(self):
        hashes = {p.genesis.hash for p in (MAIN, TEST, REGTEST)}
        self.assertEqual(len(hashes), 3)

    def test_wrong_nonce_misses_target(self):
        # The hard-coded nonces are the ones that were mined, not any nonce.
        for params in (MAIN, TEST):
            header = params.genesis.header.with_nonce(params.genesis.header.nonce + 1)
            self.assertGreater(int.from_bytes(header.hash, "little"),
                               compact_to_target(header.bits))

    def test_compact_to_target(self):
        self.assertEqual(compact_to_target(0x1D00FFFF), 0xFFFF << 208)
        self.assertEqual(compact_to_target(0x207FFFFF), 0x7FFFFF << 232)
        self.assertEqual(compact_to_target(0x1E0FFFF0), 0x0FFFF0 << 216)
        self.assertEqual(compact_to_target(0x03123456), 0x123456)
        self.assertEqual(compact_to_target(0x02123456), 0x1234)
        self.assertEqual(compact_to_target(0x01123456), 0x12)
