"""Per-network parameters as data (design.md §2, §3).

Parameter objects are looked up by name with :func:`get_params`; there is no
global "selected network".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from coin.primitives.block import Block, BlockHeader
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut

COIN = 100_000_000
MAX_MONEY = 21_000_000 * COIN
COINBASE_MATURITY = 100
MAX_BLOCK_SIZE = 2_000_000
MAX_BLOCK_SIGOPS = MAX_BLOCK_SIZE // 50
#: BIP141's weight per byte of non-witness data: with no witnesses, weight is 4 x size
#: (the ``weight`` Core-standard clients read; doc/views.md).
WITNESS_SCALE_FACTOR = 4
#: Blocks may be at most this far (seconds) ahead of network-adjusted time.
MAX_FUTURE_BLOCK_TIME = 2 * 60 * 60



@dataclass(frozen=True)
class ChainTxData:
    """Core's ChainTxData: a known point of the chain's transaction history, for
    estimating verification progress (``time`` 0 and ``tx_count`` 0: nothing known)."""

    #: UNIX time of the last known transaction count.
    time: int = 0
    #: Transactions from genesis up to that time.
    tx_count: int = 0
    #: Estimated transactions per second after that time.
    tx_rate: float = 0.0


_GENESIS_OUTPUT_KEY = bytes.fromhex(
    "04678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb6"
    "49f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5f")


def money_range(value: int) -> bool:
    return 0 <= value <= MAX_MONEY


@dataclass(frozen=True)
class Deployment:
    """A BIP9 deployment."""

    name: str
    bit: int
    start_time: int
    timeout: int
    period: int
    threshold: int


@dataclass(frozen=True)
class MajorityRule:
    """A BIP34/66/65 soft fork: blocks of ``version`` or more.

    It takes effect by version majority (``majority_*`` of the chain), or, with a
    ``height``, from that height on, as Core 0.17 sets them for regtest (design.md §3).
    """

    name: str
    version: int
    height: Optional[int] = None


@dataclass(frozen=True)
class ChainParams:
    name: str                      # "main", "test", "regtest" (RPC `chain`)
    rpc_port: int
    p2p_port: int
    datadir_subdir: str
    message_start: bytes
    pubkey_prefix: int
    script_prefix: int
    wif_prefix: int
    xpub_prefix: bytes
    xprv_prefix: bytes
    genesis: Block
    pow_limit: int
    pow_limit_bits: int
    target_spacing: int
    subsidy_halving_interval: int
    pow_allow_min_difficulty_blocks: bool
    pow_no_retargeting: bool
    dgw_past_blocks: int
    majority_enforce: int
    majority_reject: int
    majority_window: int
    deployments: Tuple[Deployment, ...]
    majority_rules: Tuple[MajorityRule, ...] = field(default=(
        MajorityRule("bip34", 2), MajorityRule("bip66", 3), MajorityRule("bip65", 4)))
    coinbase_maturity: int = COINBASE_MATURITY
    #: Relay only standard transactions unless -acceptnonstdtxn (Core: main only).
    require_standard: bool = True
    #: P2PKH address whose key signs sporks (design.md §6; the regtest key is in doc/spork.md).
    spork_address: str = ""
    #: Core's defaultAssumeValid (-assumevalid's default): None checks every script.  Main
    #: and test have no history yet; set each to a block of theirs once they have one.
    default_assume_valid: Optional[bytes] = None
    #: Transaction history for the progress estimate; empty until the chain has history.
    tx_data: ChainTxData = ChainTxData()

    def deployment(self, name: str) -> Deployment:
        for d in self.deployments:
            if d.name == name:
                return d
        raise KeyError(name)


def build_genesis(message: bytes, time: int, nonce: int, bits: int,
                  reward: int = 50 * COIN, version: int = 1) -> Block:
    """Build a genesis block the way Bitcoin's was built, from its parameters."""
    script_sig = bytes.fromhex("04ffff001d") + b"\x01\x04" + bytes((len(message),)) + message
    coinbase = Transaction([TxIn(OutPoint(), script_sig)],
                           [TxOut(reward, b"\x41" + _GENESIS_OUTPUT_KEY + b"\xac")])
    header = BlockHeader(version, b"\x00" * 32, coinbase.txid, time, bits, nonce)
    return Block(header, [coinbase])


_NO_TIMEOUT = 2 ** 63 - 1

MAIN = ChainParams(
    name="main", rpc_port=11931, p2p_port=11932, datadir_subdir="",
    message_start=bytes.fromhex("e3c01ed1"),
    pubkey_prefix=15, script_prefix=9, wif_prefix=143,
    xpub_prefix=bytes.fromhex("0488B21E"), xprv_prefix=bytes.fromhex("0488ADE4"),
    genesis=build_genesis(b"coin 25/Nov/2026 A node that never loses your data",
                          1795996800, 1575768, 0x1E0FFFF0),
    pow_limit=(1 << 236) - 1, pow_limit_bits=0x1E0FFFFF,
    target_spacing=150, subsidy_halving_interval=210_000,
    pow_allow_min_difficulty_blocks=False, pow_no_retargeting=False, dgw_past_blocks=24,
    majority_enforce=750, majority_reject=950, majority_window=1000,
    deployments=(Deployment("csv", 0, 0, _NO_TIMEOUT, 4032, 3226),),
    spork_address="74XJHRm5Usdz4jMUBBDjUzGo4RDFYrnKud",
)

TEST = ChainParams(
    name="test", rpc_port=21931, p2p_port=21932, datadir_subdir="testnet3",
    message_start=bytes.fromhex("e3c07e57"),
    pubkey_prefix=111, script_prefix=196, wif_prefix=239,
    xpub_prefix=bytes.fromhex("043587CF"), xprv_prefix=bytes.fromhex("04358394"),
    genesis=build_genesis(b"coin testnet 25/Nov/2026", 1795996801, 1548468, 0x1E0FFFF0),
    pow_limit=(1 << 236) - 1, pow_limit_bits=0x1E0FFFFF,
    target_spacing=150, subsidy_halving_interval=210_000,
    pow_allow_min_difficulty_blocks=True, pow_no_retargeting=False, dgw_past_blocks=24,
    majority_enforce=75, majority_reject=95, majority_window=100,
    deployments=(Deployment("csv", 0, 0, _NO_TIMEOUT, 100, 75),),
    require_standard=False,
    spork_address="myzASUU1QyaaxjS1QiTPk5wbrm9mfrjXC8",
)

REGTEST = ChainParams(
    name="regtest", rpc_port=31931, p2p_port=31932, datadir_subdir="regtest",
    message_start=bytes.fromhex("fabfb5da"),
    pubkey_prefix=111, script_prefix=196, wif_prefix=239,
    xpub_prefix=bytes.fromhex("043587CF"), xprv_prefix=bytes.fromhex("04358394"),
    genesis=build_genesis(
        b"The Times 03/Jan/2009 Chancellor on brink of second bailout for banks",
        1296688602, 2, 0x207FFFFF),
    pow_limit=(1 << 255) - 1, pow_limit_bits=0x207FFFFF,
    target_spacing=150, subsidy_halving_interval=150,
    pow_allow_min_difficulty_blocks=True, pow_no_retargeting=True, dgw_past_blocks=24,
    majority_enforce=75, majority_reject=95, majority_window=100,
    deployments=(Deployment("csv", 0, 0, _NO_TIMEOUT, 144, 108),),
    # Core 0.17's regtest heights: BIP34 never, so Core-era tools' version-1 blocks stay valid.
    majority_rules=(MajorityRule("bip34", 2, 100_000_000), MajorityRule("bip66", 3, 1251),
                    MajorityRule("bip65", 4, 1351)),
    require_standard=False,
    spork_address="n2wE9gjobf2XBKyBXjSWCjXbrZ1MkwRNvg",
)

_BY_NAME: Dict[str, ChainParams] = {p.name: p for p in (MAIN, TEST, REGTEST)}


def get_params(name: str) -> ChainParams:
    """Parameters for ``main``, ``test`` or ``regtest``."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError("unknown chain %r" % name) from None
