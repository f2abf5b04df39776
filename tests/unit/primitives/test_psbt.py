"""BIP174 as Core 0.17 parses it: the test vectors of the BIP that apply to legacy inputs,
strictness (duplicates, key lengths, separators), combine and finalize, and property tests
(round trip of generated PSBTs; garbage only ever raises PSBTError)."""

from __future__ import annotations

import base64

from coincurve import PrivateKey
from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from coin.primitives.hashes import hash160
from coin.primitives.psbt import PSBT, PSBTError, PSBTInput, PSBTOutput, combine
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from coin.script.psbtsign import finalize_psbt, sign_psbt_input
from coin.script.sign import KeyStore
from coin.script.standard import multisig_script, p2pkh_script, p2sh_script
from tests.unit.primitives.test_primitives_properties import HASH, SCRIPT, U32, mutated

# BIP174 "invalid" vectors that apply to legacy inputs, by Core 0.17's reason.
INVALID = {
    'Invalid PSBT magic bytes': (
        "AgAAAAEmgXE3Ht/yhek3re6ks3t4AAwFZsuzrWRkFxPKQhcb9gAAAABqRzBEAiBwsiRRI+a/R01gxbUMBD1MaRpdJDXw"
        "mjSnZiqdwlF5CgIgATKcqdrPKAvfMHQOwDkEIkIsgctFg5RXrrdvwS7dlbMBIQJlfRGNM1e44PTCzUbbezn22cONmnCr"
        "y5st5dyNv+TOMf7///8C09/1BQAAAAAZdqkU0MWZA8W6woaHYOkP1SGkZlqnZSCIrADh9QUAAAAAF6kUNUXm4zuDLEcF"
        "DyTT7rk8nAOUi8eHsy4TAA=="
    ),
    'Unsigned tx does not have empty scriptSigs and scriptWitnesses.': (
        "cHNidP8BAP0KAQIAAAACqwlJoIxa98SbghL0F+LxWrP1wz3PFTghqBOfh3pbe+QAAAAAakcwRAIgR1lmF5fAGwNrJZKJ"
        "SGhiGDR9iYZLcZ4ff89X0eURZYcCIFMJ6r9Wqk2Ikf/REf3xM286KdqGbX+EhtdVRs7tr5MZASEDXNxh/HupccC1AaZG"
        "oqg7ECy0OIEhfKaC3Ibi1z+ogpL+////qwlJoIxa98SbghL0F+LxWrP1wz3PFTghqBOfh3pbe+QBAAAAAP7///8CYDvq"
        "CwAAAAAZdqkUdopAu9dAy+gdmI5x3ipNXHE5ax2IrI4kAAAAAAAAGXapFG9GILVT+glechue4O/p+gOcykWXiKwAAAAA"
        "AAABASAA4fUFAAAAABepFDVF5uM7gyxHBQ8k0+65PJwDlIvHhwEEFgAUhdE1N/LiZUBaNNuvqePdoB+4IwgAAAA="
    ),
    'No unsigned transcation was provided': (
        "cHNidP8AAQD9pQEBAAAAAAECiaPHHqtNIOA3G7ukzGmPopXJRjr6Ljl/hTPMti+VZ+UBAAAAFxYAFL4Y0VKpsBIDna89"
        "p95PUzSe7LmF/////4b4qkOnHf8USIk6UwpyN+9rRgi7st0tAXHmOuxqSJC0AQAAABcWABT+Pp7xp0XpdNkCxDVZQ6vL"
        "NL1TU/////8CAMLrCwAAAAAZdqkUhc/xCX/Z4Ai7NK9wnGIZeziXikiIrHL++E4sAAAAF6kUM5cluiHv1irHU6m80GfW"
        "x6ajnQWHAkcwRAIgJxK+IuAnDzlPVoMR3HyppolwuAJf3TskAinwf4pfOiQCIAGLONfc0xTnNMkna9b7QPZzMlvEuqFE"
        "yADS8vAtsnZcASED0uFWdJQbrUqZY3LLh+GFbTZSYG2YVi/jnF6efkE/IQUCSDBFAiEA0SuFLYXc2WHS9fSrZgZU327t"
        "zHlMDDPOXMMJ/7X85Y0CIGczio4OFyXBl/saiK9Z9R5E5CVbIBZ8hoQDHAXR8lkqASECI7cr7vCWXRC+B3jv7NYfysb3"
        "mk6haTkzgHNEZPhPKrMAAAAAAA=="
    ),
    'Global unsigned tx key is more than one byte type': (
        "cHNidP8CAAFVAgAAAAEnmiMjpd+1H8RfIg+liw/BPh4zQnkqhdfjbNYzO1y8OQAAAAAA/////wGgWuoLAAAAABl2qRT/"
        "6cAGEJfMO2NvLLBGD6T8Qn0rRYisAAAAAAABASCVXuoLAAAAABepFGNFIA9o0YnhrcDfHE0W6o8UwNvrhyICA7E0HMun"
        "aDtq9PEjjNbpfnFn1Wn6xH8eSNR1QYRDVb1GRjBDAiAEJLWO/6qmlOFVnqXJO7/UqJBkIkBVzfBwtncUaUQtBwIfXI6w"
        "/qZRbWC4rLM61k7eYOh4W/s6qUuZvfhhUduamgEBBCIAIHcf0YrUWWZt1J89Vk49vEL0yEd042CtoWgWqO1IjVaBAQVH"
        "UiEDsTQcy6doO2r08SOM1ul+cWfVafrEfx5I1HVBhENVvUYhA95V0eHayAXj+KWMH7+blMAvPbqv4Sf+/KSZXyb4IIO9"
        "Uq4iBgOxNBzLp2g7avTxI4zW6X5xZ9Vp+sR/HkjUdUGEQ1W9RhC0prpnAAAAgAAAAIAEAACAIgYD3lXR4drIBeP4pYwf"
        "v5uUwC89uq/hJ/78pJlfJvggg70QtKa6ZwAAAIAAAACABQAAgAAA"
    ),
    'Final scriptSig key is more than one byte type': (
        "cHNidP8BAJoCAAAAAljoeiG1ba8MI76OcHBFbDNvfLqlyHV5JPVFiHuyq911AAAAAAD/////g40EJ9DsZQpoqka7CwmK"
        "6kQiwHGyyng1Kgd5WdB86h0BAAAAAP////8CcKrwCAAAAAAWABTYXCtx0AYLCcmIauuBXlCZHdoSTQDh9QUAAAAAFgAU"
        "AK6pouXw+HaliN9VRuh0LR2HAI8AAAAAAAEAuwIAAAABqtc5MQGL0l+ErkALaISL4J23BurCrBgpi6vucatlb4sAAAAA"
        "SEcwRAIgWPb8fGoz4bMVSNSByCbAFb0wE1qtQs1neQ2rZtKtJDsCIEoc7SYExnNbY5PltBaR3XiwDwxZQvufdRhW+qk4"
        "FX26Af7///8CgPD6AgAAAAAXqRQPuUY0IWlrgsgzryQceMF9295JNIfQ8gonAQAAABepFCnKdPigj4GZlCgYXJe12FLk"
        "Bj9hh2UAAAACBwDaAEcwRAIgdAGK1BgAl7hzMjwAFXILNoTMgSOJEEjn282bVa1nnJkCIHPTabdA4+tT3O+jOCPIBwUU"
        "ylWn3ZVE8VfBZ5EyYRGMAUgwRQIhAPYQOLMI3B2oZaNIUnRvAVdyk0IIxtJEVDk82ZvfIhd3AiAFbmdaZ1ptCgK4WxTl"
        "4pB02KJam1dgvqKBb2YZEKAG6gFHUiEClYO/Oa4KYJdHrRma3dY0+mEIVZ1sXNObTCGD8auW4H8hAtq2H/SaFNtqfQKw"
        "zR+7ePxLGDErW05U2uTbovv+9TbXUq4AAQEgAMLrCwAAAAAXqRS39fr0Dj1ApaRZsds1NfK3L6kh6IcBByMiACCMI1MX"
        "N0O1ld+0oHtyuo5C43l9p06H/n2ddJfjsgKJAwEI2gQARzBEAiBi63pVYQenxz9FrEq1od3fb3B1+xJ1lpp/OD7/94S8"
        "sgIgDAXbt0cNvy8IVX3TVscyXB7TCRPpls04QJRdsSIo2l8BRzBEAiBl9FulmYtZon/+GnvtAWrx8fkNVLOqj3RQql9W"
        "olEDvQIgf3JHA60e25ZoCyhLVtT/y4j3+3Weq74IqjDym4UTg9IBR1IhAwidwQx6xttU+RMpr2FzM9s4jOrQwjH3Ized"
        "G5kDCwLcIQI63ZBPPW3PWd25BrDe4jUpt/+57VDl6GFRkmhgIh8Oc1KuACICA6mkw39ZltOqJdusa1cK8GUDlEkpQkYL"
        "NUdT7Z7spYdxENkMak8AAACAAAAAgAQAAIAAIgICf2OZdX0u/1WhNq0CxoSxg4tlVuXxtrNCgqlLa1AFEJYQ2QxqTwAA"
        "AIAAAACABQAAgAA="
    ),
    'Size of key was not the expected size for the type BIP32 keypath': (
        "cHNidP8BAJoCAAAAAljoeiG1ba8MI76OcHBFbDNvfLqlyHV5JPVFiHuyq911AAAAAAD/////g40EJ9DsZQpoqka7CwmK"
        "6kQiwHGyyng1Kgd5WdB86h0BAAAAAP////8CcKrwCAAAAAAWABTYXCtx0AYLCcmIauuBXlCZHdoSTQDh9QUAAAAAFgAU"
        "AK6pouXw+HaliN9VRuh0LR2HAI8AAAAAAAEAuwIAAAABqtc5MQGL0l+ErkALaISL4J23BurCrBgpi6vucatlb4sAAAAA"
        "SEcwRAIgWPb8fGoz4bMVSNSByCbAFb0wE1qtQs1neQ2rZtKtJDsCIEoc7SYExnNbY5PltBaR3XiwDwxZQvufdRhW+qk4"
        "FX26Af7///8CgPD6AgAAAAAXqRQPuUY0IWlrgsgzryQceMF9295JNIfQ8gonAQAAABepFCnKdPigj4GZlCgYXJe12FLk"
        "Bj9hh2UAAAABB9oARzBEAiB0AYrUGACXuHMyPAAVcgs2hMyBI4kQSOfbzZtVrWecmQIgc9Npt0Dj61Pc76M4I8gHBRTK"
        "VafdlUTxV8FnkTJhEYwBSDBFAiEA9hA4swjcHahlo0hSdG8BV3KTQgjG0kRUOTzZm98iF3cCIAVuZ1pnWm0KArhbFOXi"
        "kHTYolqbV2C+ooFvZhkQoAbqAUdSIQKVg785rgpgl0etGZrd1jT6YQhVnWxc05tMIYPxq5bgfyEC2rYf9JoU22p9ArDN"
        "H7t4/EsYMStbTlTa5Nui+/71NtdSrgABASAAwusLAAAAABepFLf1+vQOPUClpFmx2zU18rcvqSHohwEHIyIAIIwjUxc3"
        "Q7WV37Sge3K6jkLjeX2nTof+fZ10l+OyAokDAQjaBABHMEQCIGLrelVhB6fHP0WsSrWh3d9vcHX7EnWWmn84Pv/3hLyy"
        "AiAMBdu3Rw2/LwhVfdNWxzJcHtMJE+mWzThAlF2xIijaXwFHMEQCIGX0W6WZi1mif/4ae+0BavHx+Q1Us6qPdFCqX1ai"
        "UQO9AiB/ckcDrR7blmgLKEtW1P/LiPf7dZ6rvgiqMPKbhROD0gFHUiEDCJ3BDHrG21T5EymvYXMz2ziM6tDCMfcjN50b"
        "mQMLAtwhAjrdkE89bc9Z3bkGsN7iNSm3/7ntUOXoYVGSaGAiHw5zUq4AIQIDqaTDf1mW06ol26xrVwrwZQOUSSlCRgs1"
        "R1PtnuylhxDZDGpPAAAAgAAAAIAEAACAACICAn9jmXV9Lv9VoTatAsaEsYOLZVbl8bazQoKpS2tQBRCWENkMak8AAACA"
        "AAAAgAUAAIAA"
    ),
    'Sighash type key is more than one byte type': (
        "cHNidP8BAHMCAAAAATAa6YblFqHsisW0vGVz0y+DtGXiOtdhZ9aLOOcwtNvbAAAAAAD/////AnR7AQAAAAAAF6kUA6oX"
        "rogrXQ1Usl1jEE5P/s57nqKHYEOZOwAAAAAXqRS5IbG6b3IuS/qDtlV6MTmYakLsg4cAAAAAAAEBHwDKmjsAAAAAFgAU"
        "0tlLZK4IWH7vyO6xh8YB6Tn5A3wCAwABAAAAAAEAFgAUYunpgv/zTdgjlhAxawkM0qO3R8sAAQAiACCHa62DLx0WgBXt"
        "QSMqnqZaGBXZ7xPA74dZ9ktbKyeKZQEBJVEhA7fOI6AcW0vwCmQlN836uzFbZoMyhnR471EwnSvVf4qHUa4A"
    ),
    'Output redeemScript key is more than one byte type': (
        "cHNidP8BAHMCAAAAATAa6YblFqHsisW0vGVz0y+DtGXiOtdhZ9aLOOcwtNvbAAAAAAD/////AnR7AQAAAAAAF6kUA6oX"
        "rogrXQ1Usl1jEE5P/s57nqKHYEOZOwAAAAAXqRS5IbG6b3IuS/qDtlV6MTmYakLsg4cAAAAAAAEBHwDKmjsAAAAAFgAU"
        "0tlLZK4IWH7vyO6xh8YB6Tn5A3wAAgAAFgAUYunpgv/zTdgjlhAxawkM0qO3R8sAAQAiACCHa62DLx0WgBXtQSMqnqZa"
        "GBXZ7xPA74dZ9ktbKyeKZQEBJVEhA7fOI6AcW0vwCmQlN836uzFbZoMyhnR471EwnSvVf4qHUa4A"
    ),
}
# BIP174 "valid": unknown keys in an input, kept and written back unchanged.
VALID_UNKNOWN = ("cHNidP8BAD8CAAAAAf//////////////////////////////////////////AAAAAAD/////AQAAAAAAAAAAA2oB"
                 "AAAAAAAACg8BAgMEBQYHCAkPAQIDBAUGBwgJCgsMDQ4PAAA=")

#: What libstdc++ appends to the text of Core's std::ios_base::failure.
IOS = ": iostream error"
KEYS = [PrivateKey(bytes([i]) * 32) for i in (1, 2, 3)]
PUBKEYS = [key.public_key.format() for key in KEYS]


def spending(script_pubkey: bytes, value: int = 50_000) -> PSBT:
    """A PSBT spending output 0 of a transaction paying ``script_pubkey``, with that
    transaction as its non-witness UTXO."""
    funding = Transaction([TxIn(OutPoint(b"\x01" * 32, 0))], [TxOut(value, script_pubkey)])
    tx = Transaction([TxIn(OutPoint(funding.txid, 0))],
                     [TxOut(value - 1000, p2pkh_script(b"\x02" * 20))])
    psbt = PSBT(tx)
    psbt.inputs[0].non_witness_utxo = funding
    return psbt


def keystore(*keys: PrivateKey) -> KeyStore:
    store = KeyStore()
    for key in keys:
        store.add_key(key)
    return store


class VectorTests(SynchronousTestCase):

    def test_invalid_vectors_refused_with_cores_reason(self) -> None:
        for reason, text in INVALID.items():
            with self.assertRaises(PSBTError) as caught:
                PSBT.from_base64(text)
            self.assertEqual(str(caught.exception), reason + IOS)

    def test_unknown_input_keys_round_trip(self) -> None:
        psbt = PSBT.from_base64(VALID_UNKNOWN)
        self.assertEqual(psbt.inputs[0].unknown,
                         {bytes.fromhex("0f010203040506070809"): bytes(range(1, 16))})
        self.assertEqual(psbt.to_base64(), VALID_UNKNOWN)


class StrictnessTests(SynchronousTestCase):

    def assertRefused(self, data: bytes, reason: str, suffix: str = IOS) -> None:
        with self.assertRaises(PSBTError) as caught:
            PSBT.deserialize(data)
        self.assertEqual(str(caught.exception), reason + suffix)

    def test_duplicate_unknown_key_refused_single_kept(self) -> None:
        psbt = spending(p2pkh_script(hash160(PUBKEYS[0])))
        data = psbt.serialize()
        glob_end = len(PSBT(psbt.tx).serialize()) - 3  # the global separator
        record = b"\x02\xf0\x01\x01\x07"
        self.assertRefused(data[:glob_end] + record + record + data[glob_end:],
                           "Duplicate Key, key for unknown value already provided")
        kept = PSBT.deserialize(data[:glob_end] + record + data[glob_end:])
        self.assertEqual(kept.unknown, {b"\xf0\x01": b"\x07"})
        self.assertEqual(kept.serialize(), data[:glob_end] + record + data[glob_end:])

    def test_duplicate_utxo_refused(self) -> None:
        psbt = spending(p2pkh_script(hash160(PUBKEYS[0])))
        utxo = psbt.inputs[0].serialize()[:-1]
        head = PSBT(psbt.tx).serialize()[:-2]
        self.assertRefused(head + utxo + utxo + b"\x00\x00",
                           "Duplicate Key, input non-witness utxo already provided")

    def test_duplicate_partial_signature_refused(self) -> None:
        psbt = spending(p2pkh_script(hash160(PUBKEYS[0])))
        record = b"\x22\x02" + PUBKEYS[0] + b"\x01\x30"
        head = PSBT(psbt.tx).serialize()[:-2]
        self.assertRefused(head + record + record + b"\x00\x00",
                           "Duplicate Key, input partial signature for pubkey already provided")

    def test_missing_separator_truncation_and_extra_data(self) -> None:
        data = spending(p2pkh_script(hash160(PUBKEYS[0]))).serialize()
        # An empty output map is its separator alone: without it the output is missing.
        self.assertRefused(data[:-1], "Outputs provided does not match the number of outputs in "
                                      "transaction.")
        # Core 0.17.0 reads a map while data is left: an input map ending without its
        # separator is complete, and then the output map is missing.
        self.assertRefused(data[:-2] + b"\x01\xf0\x00", "Outputs provided does not match the "
                                                        "number of outputs in transaction.")
        for cut in (0, 3, 7, len(data) // 2):
            self.assertRefused(data[:cut], "CDataStream::read(): end of data")
        self.assertRefused(data + b"\x00", "extra data after PSBT", suffix="")

    def test_utxo_must_match_outpoint(self) -> None:
        psbt = spending(p2pkh_script(hash160(PUBKEYS[0])))
        psbt.inputs[0].non_witness_utxo = Transaction([], [TxOut(1, b"")])
        self.assertRefused(psbt.serialize(), "Non-witness UTXO does not match outpoint hash")

    def test_base64_read_up_to_the_first_other_character(self) -> None:
        """Core 0.17's DecodeBase64: what follows a non-base64 character is ignored."""
        text = spending(p2pkh_script(hash160(PUBKEYS[0]))).to_base64()
        for tail in ("!", "?junk", "==x", " more"):
            self.assertEqual(PSBT.from_base64(text + tail).to_base64(), text)
        with self.assertRaises(PSBTError) as caught:
            PSBT.from_base64("cHNi!dP8=")
        self.assertEqual(str(caught.exception), "CDataStream::read(): end of data" + IOS)


class SigningTests(SynchronousTestCase):

    def test_p2pkh_signed_finalized_extracted(self) -> None:
        psbt = spending(p2pkh_script(hash160(PUBKEYS[0])))
        self.assertFalse(finalize_psbt(psbt))
        self.assertTrue(sign_psbt_input(psbt, 0, keystore(KEYS[0])))
        inp = psbt.inputs[0]
        self.assertEqual((inp.partial_sigs, inp.final_script_sig[-33:]), ({}, PUBKEYS[0]))
        self.assertEqual(psbt.extract().vin[0].script_sig, inp.final_script_sig)

    def test_p2sh_multisig_two_signers_combine_finalize(self) -> None:
        redeem = multisig_script(2, PUBKEYS)
        created = spending(p2sh_script(hash160(redeem)))
        created.inputs[0].redeem_script = redeem
        copies = []
        for key in KEYS[:2]:
            copy = PSBT.deserialize(created.serialize())
            self.assertFalse(sign_psbt_input(copy, 0, keystore(key)))
            copies.append(copy)
        self.assertFalse(finalize_psbt(copies[0]))
        combined = combine(copies)
        self.assertEqual(sorted(combined.inputs[0].partial_sigs), sorted(PUBKEYS[:2]))
        self.assertTrue(finalize_psbt(combined))
        self.assertTrue(combined.inputs[0].final_script_sig.endswith(redeem))

    def test_combine_refuses_other_transaction(self) -> None:
        a = spending(p2pkh_script(b"\x00" * 20))
        b = spending(p2pkh_script(b"\x00" * 20), value=60_000)
        with self.assertRaises(PSBTError):
            combine([a, b])


PUBKEY = st.sampled_from(PUBKEYS)
UNKNOWN = st.dictionaries(st.binary(min_size=1, max_size=6).filter(lambda k: k[0] >= 0x10),
                          st.binary(max_size=20), max_size=3)
PATH = st.lists(U32, min_size=1, max_size=4).map(tuple)


@st.composite
def psbts(draw: st.DrawFn) -> PSBT:
    """Canonical PSBTs (what the serializer writes), legacy fields and unknown ones."""
    vin, inputs = [], []
    for _ in range(draw(st.integers(0, 3))):
        inp = PSBTInput()
        prevout = OutPoint(draw(HASH), draw(U32))
        if draw(st.booleans()):
            inp.non_witness_utxo = Transaction([TxIn(OutPoint(draw(HASH), 0))], [TxOut(5, b"")])
            prevout = OutPoint(inp.non_witness_utxo.txid, prevout.n)
        if draw(st.booleans()):
            inp.final_script_sig = draw(st.binary(min_size=1, max_size=30))
        else:
            inp.partial_sigs = draw(st.dictionaries(PUBKEY, st.binary(max_size=72), max_size=2))
            inp.sighash = draw(st.one_of(st.none(), st.integers(1, 0x83)))
            inp.redeem_script = draw(SCRIPT)
            inp.keypaths = draw(st.dictionaries(PUBKEY, PATH, max_size=2))
        inp.unknown = draw(UNKNOWN)
        vin.append(TxIn(prevout, b"", draw(U32)))
        inputs.append(inp)
    vout = draw(st.lists(st.builds(TxOut, st.integers(0, 2 ** 40), SCRIPT), max_size=3))
    outputs = []
    for _ in vout:
        out = PSBTOutput()
        out.redeem_script = draw(SCRIPT)
        out.keypaths = draw(st.dictionaries(PUBKEY, PATH, max_size=2))
        out.unknown = draw(UNKNOWN)
        outputs.append(out)
    return PSBT(Transaction(vin, vout, draw(U32), 2), inputs, outputs, draw(UNKNOWN))


class PropertyTests(SynchronousTestCase):

    @given(psbts())
    def test_round_trip(self, psbt: PSBT) -> None:
        data = psbt.serialize()
        parsed = PSBT.deserialize(data)
        self.assertEqual(parsed.serialize(), data)
        self.assertEqual(PSBT.from_base64(base64.b64encode(data).decode()), parsed)

    @given(st.data())
    def test_garbage_only_raises_psbt_error(self, data: st.DataObject) -> None:
        raw = data.draw(psbts()).serialize()
        garbage = data.draw(st.one_of(mutated(raw), st.binary(max_size=200)))
        try:
            parsed = PSBT.deserialize(garbage)
        except PSBTError:
            return
        self.assertIsInstance(parsed.serialize(), bytes)
