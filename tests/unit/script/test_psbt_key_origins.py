"""Which wallet keys a PSBT's key origins (``bip32derivs``) name, and how decodepsbt shows
them: against Core 0.17's own wallet test vector (psbt_wallet_tests.cpp), whose seed,
fingerprint, paths and filled PSBT are fixed there."""

from __future__ import annotations

from typing import Dict, Optional

from coincurve import PrivateKey
from twisted.trial.unittest import SynchronousTestCase

from coin.primitives.base58 import b58check_decode
from coin.primitives.hashes import hash160
from coin.primitives.psbt import PSBT
from coin.rpc.methods.psbt import _keypaths_json
from coin.script.psbtsign import keys_looked_up
from coin.script.sign import KeyStore
from coin.script.standard import multisig_script, p2pk_script, p2pkh_script, p2sh_script
from coin.wallet.hd import HARDENED, ExtKey

#: Core's vector: the seed is this key's secret (DeriveNewSeed), keys at m/0'/0'/k'.
SEED_WIF = "5KSSJQ7UNfFGwVgpCZDSHm5rVNhMFcFtvWM3zQ8mW4qNDEN7LFd"
KEYS = ["029583bf39ae0a609747ad199addd634fa6108559d6c5cd39b4c2183f1ab96e07f",
        "02dab61ff49a14db6a7d02b0cd1fbb78fc4b18312b5b4e54dae4dba2fbfef536d7",
        "03089dc10c7ac6db54f91329af617333db388cead0c231f723379d1b99030b02dc",
        "023add904f3d6dcf59ddb906b0dee23529b7ffb9ed50e5e86151926860221f0e73",
        "03a9a4c37f5996d3aa25dbac6b570af0650394492942460b354753ed9eeca58771",
        "027f6399757d2eff55a136ad02c684b1838b6556e5f1b6b34282a94b6b50051096"]
#: FillPSBT(wallet, psbt, SIGHASH_ALL, sign=false, bip32derivs=true)'s result in that test.
FILLED = (
    "70736274ff01009a020000000258e87a21b56daf0c23be8e7070456c336f7cbaa5c8757924f545887bb2abdd"
    "750000000000ffffffff838d0427d0ec650a68aa46bb0b098aea4422c071b2ca78352a077959d07cea1d0100"
    "000000ffffffff0270aaf00800000000160014d85c2b71d0060b09c9886aeb815e50991dda124d00e1f50500"
    "00000016001400aea9a2e5f0f876a588df5546e8742d1d87008f00000000000100bb0200000001aad7393101"
    "8bd25f84ae400b68848be09db706eac2ac18298babee71ab656f8b0000000048473044022058f6fc7c6a33e1"
    "b31548d481c826c015bd30135aad42cd67790dab66d2ad243b02204a1ced2604c6735b6393e5b41691dd78b0"
    "0f0c5942fb9f751856faa938157dba01feffffff0280f0fa020000000017a9140fb9463421696b82c833af24"
    "1c78c17ddbde493487d0f20a270100000017a91429ca74f8a08f81999428185c97b5d852e4063f6187650000"
    "000104475221029583bf39ae0a609747ad199addd634fa6108559d6c5cd39b4c2183f1ab96e07f2102dab61f"
    "f49a14db6a7d02b0cd1fbb78fc4b18312b5b4e54dae4dba2fbfef536d752ae2206029583bf39ae0a609747ad"
    "199addd634fa6108559d6c5cd39b4c2183f1ab96e07f10d90c6a4f000000800000008000000080220602dab6"
    "1ff49a14db6a7d02b0cd1fbb78fc4b18312b5b4e54dae4dba2fbfef536d710d90c6a4f000000800000008001"
    "0000800001012000c2eb0b0000000017a914b7f5faf40e3d40a5a459b1db3535f2b72fa921e88701042200208c"
    "2353173743b595dfb4a07b72ba8e42e3797da74e87fe7d9d7497e3b2028903010547522103089dc10c7ac6db"
    "54f91329af617333db388cead0c231f723379d1b99030b02dc21023add904f3d6dcf59ddb906b0dee23529b7"
    "ffb9ed50e5e86151926860221f0e7352ae2206023add904f3d6dcf59ddb906b0dee23529b7ffb9ed50e5e861"
    "51926860221f0e7310d90c6a4f000000800000008003000080220603089dc10c7ac6db54f91329af617333db"
    "388cead0c231f723379d1b99030b02dc10d90c6a4f00000080000000800200008000220203a9a4c37f5996d3"
    "aa25dbac6b570af0650394492942460b354753ed9eeca5877110d90c6a4f0000008000000080040000800022"
    "02027f6399757d2eff55a136ad02c684b1838b6556e5f1b6b34282a94b6b5005109610d90c6a4f0000008000"
    "0000800500008000")


class CoreVectorTests(SynchronousTestCase):

    def test_seed_fingerprint_and_paths(self) -> None:
        master = ExtKey.from_seed(b58check_decode(SEED_WIF)[1:33])
        self.assertEqual(master.fingerprint.hex(), "d90c6a4f")
        chain = master.derive_path("m/0'/0'")
        self.assertEqual([chain.derive(k | HARDENED).pubkey.hex() for k in range(6)], KEYS)

    def test_decodepsbt_shows_core_s_array(self) -> None:
        psbt = PSBT.deserialize(bytes.fromhex(FILLED))
        self.assertEqual(_keypaths_json(psbt.inputs[0].keypaths), [
            {"pubkey": KEYS[0], "master_fingerprint": "d90c6a4f", "path": "m/0'/0'/0'"},
            {"pubkey": KEYS[1], "master_fingerprint": "d90c6a4f", "path": "m/0'/0'/1'"}])
        self.assertEqual(_keypaths_json(psbt.outputs[1].keypaths), [
            {"pubkey": KEYS[5], "master_fingerprint": "d90c6a4f", "path": "m/0'/0'/5'"}])


def _lookup(*held: bytes) -> "Dict[bytes, bytes]":
    table = {hash160(pubkey): pubkey for pubkey in held}
    table.update({pubkey: pubkey for pubkey in held})
    return table


class KeysLookedUpTests(SynchronousTestCase):
    """Core 0.17's ProduceSignature: the keys it finds in the wallet on its way."""

    keys = [PrivateKey(bytes([i]) * 32).public_key.format() for i in range(1, 4)]

    def looked_up(self, script: bytes, held: "Optional[list]" = None, before: frozenset = frozenset(),
                  signed: frozenset = frozenset(), redeem: bytes = b"",
                  store: Optional[KeyStore] = None) -> list:
        table = _lookup(*(self.keys if held is None else held))
        return keys_looked_up(script, redeem, store or KeyStore(), table.get, before, signed)

    def test_p2pkh_and_p2pk(self) -> None:
        k1, k2, _ = self.keys
        self.assertEqual(self.looked_up(p2pkh_script(hash160(k1))), [k1])
        self.assertEqual(self.looked_up(p2pkh_script(hash160(k1)), held=[k2]), [])
        self.assertEqual(self.looked_up(p2pk_script(k2)), [k2])
        # A signature already there is taken without looking its key up.
        self.assertEqual(self.looked_up(p2pk_script(k2), before=frozenset([k2])), [])

    def test_multisig_stops_once_enough_signatures(self) -> None:
        k1, k2, k3 = self.keys
        script = multisig_script(2, self.keys)
        self.assertEqual(self.looked_up(script), [k1, k2, k3])
        self.assertEqual(self.looked_up(script, signed=frozenset([k1, k2])), [k1, k2])
        self.assertEqual(self.looked_up(script, before=frozenset([k1]), signed=frozenset([k1, k3])),
                         [k2, k3])
        self.assertEqual(self.looked_up(script, held=[k2]), [k2])

    def test_p2sh_from_the_store_or_the_psbt(self) -> None:
        k1, k2, _ = self.keys
        redeem = multisig_script(1, [k1, k2])
        script = p2sh_script(hash160(redeem))
        self.assertEqual(self.looked_up(script), [])
        self.assertEqual(self.looked_up(script, redeem=redeem), [k1, k2])
        store = KeyStore()
        store.add_script(redeem)
        self.assertEqual(self.looked_up(script, store=store, signed=frozenset([k1])), [k1])
        # A redeem script that is not the hashed one is not used.
        self.assertEqual(self.looked_up(script, redeem=multisig_script(1, [k2])), [])
