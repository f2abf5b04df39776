"""Keys and scripts into and out of a wallet: imports, dumpprivkey, dumpwallet/importwallet.

Each store step runs with the wallet's lock held, in one database transaction
(:func:`coin.wallet.access.in_wallet` with ``write``); a rescan, when one is
wanted, follows under the caller's :class:`coin.wallet.rescan.Reservation`.
The dump file format is Core 0.17's.
"""

from __future__ import annotations

import calendar
import os
import time
from typing import Any, Dict, List, Optional, Tuple

import coincurve

from coin import __version__
from coin.primitives.address import (
    AddressError, Destination, decode_wif, encode_address, encode_wif, try_decode_address,
)
from coin.primitives.hashes import hash160
from coin.primitives.hashes import is_hex
from coin.script.standard import (
    TX_MULTISIG, TX_SCRIPTHASH, destination_script, extract_destinations, p2pk_script, p2pkh_script,
    p2sh_script,
)
from coin.wallet.addresses import ensure_unlocked, key_of_address, p2pkh_address
from coin.wallet.errors import (
    RPC_INVALID_ADDRESS_OR_KEY, RPC_MISC_ERROR, RPC_INVALID_PARAMETER, RPC_TYPE_ERROR, RPC_WALLET_ERROR,
    WalletError,
)
from coin.wallet.hd import ExtKey
from coin.wallet.keystore import ISMINE_SPENDABLE
from coin.wallet.wallet import PURPOSE_RECEIVE, Wallet

#: Tip height, hash (hex) and block time, as a dump's header names them.
TipInfo = Tuple[int, str, int]


# ---------------------------------------------------------------------------------- imports

def import_key(wallet: Wallet, secret: bytes, compressed: bool, label: str) -> bool:
    """importprivkey's store step; True when the key is new (a rescan is worth it)."""
    ensure_unlocked(wallet)
    pubkey = coincurve.PrivateKey(secret).public_key.format(compressed)
    wallet.set_name(p2pkh_address(wallet, pubkey), label, PURPOSE_RECEIVE)
    if wallet.keys.have_secret(pubkey):
        return False
    # Its birth is unknown: as Core, time 1, so a time-based rescan covers the whole chain.
    wallet.keys.add_key(secret, compressed, created=1)
    return True


def _import_script(wallet: Wallet, script: bytes, label: str, redeem_script: bool) -> None:
    """Core's ImportScript."""
    if not redeem_script and wallet.is_mine(script) == ISMINE_SPENDABLE:
        raise WalletError(RPC_WALLET_ERROR, "The wallet already contains the private key for "
                          "this address or script")
    if script not in wallet.keys.watch:
        wallet.keys.add_watch(script)
    if redeem_script:
        script_hash = hash160(script)
        if script_hash not in wallet.keys.scripts:
            wallet.keys.add_script(script)
        _import_address(wallet, Destination("scripthash", script_hash), label)
        return
    kind, destinations, _ = extract_destinations(script)
    if kind != TX_MULTISIG and len(destinations) == 1:
        wallet.set_name(encode_address(destinations[0], wallet.params), label, PURPOSE_RECEIVE)


def _import_address(wallet: Wallet, destination: Destination, label: str) -> None:
    """Core's ImportAddress."""
    _import_script(wallet, destination_script(destination), label, False)
    wallet.set_name(encode_address(destination, wallet.params), label, PURPOSE_RECEIVE)


def import_address_or_script(wallet: Wallet, text: str, label: str, p2sh: bool) -> None:
    """importaddress's store step: ``text`` is an address or a hex script."""
    destination = try_decode_address(text, wallet.params)
    if destination is not None:
        if p2sh:
            raise WalletError(RPC_INVALID_ADDRESS_OR_KEY,
                              "Cannot use the p2sh flag with an address - use a script instead")
        _import_address(wallet, destination, label)
    elif is_hex(text):
        _import_script(wallet, bytes.fromhex(text), label, p2sh)
    else:
        raise WalletError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid Coin address or script")


def import_pubkey(wallet: Wallet, pubkey: bytes, label: str) -> None:
    """importpubkey's store step: the key's P2PKH address and its P2PK script."""
    _import_address(wallet, Destination("pubkeyhash", hash160(pubkey)), label)
    _import_script(wallet, p2pk_script(pubkey), label, False)


def dump_privkey(wallet: Wallet, address: str) -> str:
    """dumpprivkey: the WIF of ``address``'s key."""
    pubkey = key_of_address(
        wallet, address, WalletError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid Coin address"),
        WalletError(RPC_TYPE_ERROR, "Address does not refer to a key"),
        WalletError(RPC_WALLET_ERROR, "Private key for address %s is not known" % address))
    return encode_wif(wallet.keys.secret_of(pubkey), wallet.params, len(pubkey) == 33)


# ---------------------------------------------------------------------------------- importmulti

def _missing_fields() -> WalletError:
    """What Core answers for a request field of the wrong JSON type (its catch-all)."""
    return WalletError(RPC_MISC_ERROR, "Missing required fields")


def import_timestamp(request: Any, now: int) -> int:
    """Core's GetImportTimestamp: a number, or "now" (the tip's median time past)."""
    if not isinstance(request, dict) or "timestamp" not in request:
        raise WalletError(RPC_TYPE_ERROR, "Missing required timestamp field for key")
    value = request["timestamp"]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if value == "now":
        return now
    raise WalletError(RPC_TYPE_ERROR, 'Expected number or "now" timestamp value for key. got '
                      "type %s" % _json_type_name(value))


def _json_type_name(value: Any) -> str:
    """UniValue's uvTypeName."""
    for kind, name in ((bool, "bool"), (str, "string"), (dict, "object"), (list, "array"),
                       ((int, float), "number")):
        if isinstance(value, kind):
            return name
    return "null"


def _field(request: Dict[str, Any], name: str, kind: type, default: Any) -> Any:
    value = request.get(name, default)
    if not isinstance(value, kind):
        raise _missing_fields()
    return value


def _check_mine(wallet: Wallet, script: bytes) -> None:
    if wallet.is_mine(script) == ISMINE_SPENDABLE:
        raise WalletError(RPC_WALLET_ERROR, "The wallet already contains the private key for "
                          "this address or script")


def _watch(wallet: Wallet, script: bytes) -> None:
    _check_mine(wallet, script)
    if script not in wallet.keys.watch:
        wallet.keys.add_watch(script)


def _key_from_wif(wallet: Wallet, text: Any) -> Tuple[bytes, bool, bytes]:
    """(secret, compressed, public key) of a WIF text; -5 when it is none."""
    if not isinstance(text, str):
        raise _missing_fields()
    try:
        secret, compressed = decode_wif(text, wallet.params)
    except AddressError:
        raise WalletError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid private key encoding") from None
    return secret, compressed, coincurve.PrivateKey(secret).public_key.format(compressed)


def _consistent(pubkey: bytes, destination: Optional[Destination], script: bytes) -> None:
    """The key must be the address's (or the script's, when it has one destination)."""
    key_destination = Destination("pubkeyhash", hash160(pubkey))
    if destination is None:
        _, found, _ = extract_destinations(script)
        destination = found[0] if len(found) == 1 else key_destination
    if destination != key_destination:
        raise WalletError(RPC_INVALID_ADDRESS_OR_KEY, "Consistency check failed")


def _add_key(wallet: Wallet, secret: bytes, compressed: bool, pubkey: bytes, label: str,
             timestamp: int, duplicate: WalletError) -> None:
    wallet.set_name(p2pkh_address(wallet, pubkey), label, PURPOSE_RECEIVE)
    if wallet.keys.have_secret(pubkey):
        raise duplicate
    wallet.keys.add_key(secret, compressed, created=timestamp)


def import_multi_request(wallet: Wallet, request: Dict[str, Any], timestamp: int) -> None:
    """One importmulti request (Core 0.17's ProcessImport, without witness scripts); what a
    refused request stored before its error stays, as in Core."""
    target = request.get("scriptPubKey")
    is_script = isinstance(target, str)
    if not is_script and not (isinstance(target, dict) and "address" in target):
        raise WalletError(RPC_INVALID_PARAMETER, "Invalid scriptPubKey")
    redeem_hex = _field(request, "redeemscript", str, "")
    pubkeys = _field(request, "pubkeys", list, [])
    keys = _field(request, "keys", list, [])
    internal = _field(request, "internal", bool, False)
    watch_only = _field(request, "watchonly", bool, False)
    label = "" if internal else _field(request, "label", str, "")
    output = target if is_script else target["address"]
    if not isinstance(output, str):
        raise _missing_fields()
    destination: Optional[Destination] = None
    if is_script:
        if not is_hex(output):
            raise WalletError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid scriptPubKey")
        script = bytes.fromhex(output)
    else:
        destination = try_decode_address(output, wallet.params)
        if destination is None:
            raise WalletError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid address")
        script = destination_script(destination)
    if watch_only and keys:
        raise WalletError(RPC_INVALID_PARAMETER, "Incompatibility found between watchonly and keys")
    if internal and "label" in request:
        raise WalletError(RPC_INVALID_PARAMETER, "Incompatibility found between internal and label")
    if not internal and is_script:
        raise WalletError(RPC_INVALID_PARAMETER, "Internal must be set for hex scriptPubKey")
    if not redeem_hex and (len(keys) > 1 or len(pubkeys) > 1):
        raise WalletError(RPC_INVALID_PARAMETER, "More than private key given for one address")
    if redeem_hex and not is_hex(redeem_hex):
        raise WalletError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid redeem script")
    if redeem_hex:
        _import_p2sh(wallet, script, bytes.fromhex(redeem_hex), destination, keys, label,
                     timestamp)
        return
    if pubkeys and not keys:
        text = pubkeys[0]
        if not isinstance(text, str):
            raise _missing_fields()
        if not is_hex(text):
            raise WalletError(RPC_INVALID_ADDRESS_OR_KEY, "Pubkey must be a hex string")
        pubkey = bytes.fromhex(text)
        try:
            coincurve.PublicKey(pubkey)
        except ValueError:
            raise WalletError(RPC_INVALID_ADDRESS_OR_KEY,
                              "Pubkey is not a valid public key") from None
        _consistent(pubkey, destination, script)
        _watch(wallet, p2pkh_script(hash160(pubkey)))
        wallet.set_name(p2pkh_address(wallet, pubkey), label, PURPOSE_RECEIVE)
        _watch(wallet, p2pk_script(pubkey))
    if keys:
        secret, compressed, pubkey = _key_from_wif(wallet, keys[0])
        _consistent(pubkey, destination, script)
        _add_key(wallet, secret, compressed, pubkey, label, timestamp, WalletError(
            RPC_WALLET_ERROR, "The wallet already contains the private key for this address or script"))
    if not pubkeys and not keys:
        _watch(wallet, script)
        if destination is not None:
            wallet.set_name(encode_address(destination, wallet.params), label, PURPOSE_RECEIVE)


def _import_p2sh(wallet: Wallet, script: bytes, redeem_script: bytes,
                 destination: Optional[Destination], keys: List[Any], label: str,
                 timestamp: int) -> None:
    """importmulti with a redeem script: the script, its P2SH output watched, the keys."""
    kind, _, _ = extract_destinations(script)
    if kind != TX_SCRIPTHASH:
        raise WalletError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid P2SH address / script")
    if redeem_script not in wallet.keys.watch:
        wallet.keys.add_watch(redeem_script)
    if hash160(redeem_script) not in wallet.keys.scripts:
        wallet.keys.add_script(redeem_script)
    _watch(wallet, p2sh_script(hash160(redeem_script)))
    if destination is not None:
        wallet.set_name(encode_address(destination, wallet.params), label, PURPOSE_RECEIVE)
    for text in keys:
        secret, compressed, pubkey = _key_from_wif(wallet, text)
        _add_key(wallet, secret, compressed, pubkey, label, timestamp,
                 WalletError(RPC_INVALID_ADDRESS_OR_KEY, "Already have this key"))


# ---------------------------------------------------------------------------------- dump files

def encode_dump_string(text: str) -> str:
    """Core's EncodeDumpString: bytes <= 32, >= 128 and '%' as %xx."""
    return "".join("%%%02x" % b if b <= 32 or b >= 128 or b == 0x25 else chr(b)
                   for b in text.encode("utf-8", "surrogatepass"))


def decode_dump_string(text: str) -> str:
    """Core's DecodeDumpString (lenient: a malformed escape decodes as Core's arithmetic)."""
    data = text.encode("utf-8", "surrogateescape")
    out = bytearray()
    pos = 0
    while pos < len(data):
        c = data[pos]
        if c == 0x25 and pos + 2 < len(data):
            hi, lo = data[pos + 1], data[pos + 2]
            c = ((((hi >> 6) * 9 + ((hi - 48) & 15)) << 4)
                 | ((lo >> 6) * 9 + ((lo - 48) & 15))) & 0xFF
            pos += 2
        out.append(c)
        pos += 1
    return out.decode("utf-8", "replace")


def decode_dump_time(text: str) -> int:
    """Core's DecodeDumpTime: ``YYYY-MM-DDTHH:MM:SSZ`` -> seconds, 0 when unreadable."""
    try:
        return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return 0


def _iso8601(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def dump_text(wallet: Wallet, now: int, tip: TipInfo) -> str:
    """The whole dumpwallet file, as Core 0.17 writes it."""
    ensure_unlocked(wallet)
    keys = wallet.keys
    params = wallet.params
    lines = ["# Wallet dump created by Coin v%s\n" % __version__,
             "# * Created on %s\n" % _iso8601(now),
             "# * Best block at time of backup was %d (%s),\n" % (tip[0], tip[1]),
             "#   mined on %s\n" % _iso8601(tip[2]), "\n"]
    seed = keys.seed_secret()
    seed_pubkey = keys.seed_pubkey
    if seed is not None:
        lines.append("# extended private masterkey: %s\n\n"
                     % ExtKey.from_seed(seed).serialize(params.xprv_prefix))
    reserve = {pubkey for pubkey, _, _ in keys.pool.values()}
    entries: List[Tuple[int, bytes, bytes, bytes, Optional[str]]] = []
    hd_times = [record.created for record in keys.keys.values() if record.hd_path]
    for pubkey, record in keys.keys.items():
        if keys.have_secret(pubkey):
            entries.append((record.created, hash160(pubkey), pubkey, keys.secret_of(pubkey),
                            record.hd_path))
    if seed is not None and seed_pubkey is not None:
        entries.append((min(hd_times, default=now), hash160(seed_pubkey), seed_pubkey, seed, "s"))
    entries.sort(key=lambda e: (e[0], e[1]))
    for created, key_id, pubkey, secret, hd_path in entries:
        address = encode_address(Destination("pubkeyhash", key_id), params)
        lines.append("%s %s " % (encode_wif(secret, params, len(pubkey) == 33), _iso8601(created)))
        if address in wallet.names:
            lines.append("label=%s" % encode_dump_string(wallet.names[address][0]))
        elif pubkey == seed_pubkey:
            lines.append("hdseed=1")
        elif pubkey in reserve:
            lines.append("reserve=1")
        else:
            lines.append("change=1")
        lines.append(" # addr=%s%s\n" % (address, " hdkeypath=" + hd_path if hd_path else ""))
    lines.append("\n")
    for script_hash, script in sorted(keys.scripts.items()):
        lines.append("%s 0 script=1 # addr=%s\n"
                     % (script.hex(), encode_address(Destination("scripthash", script_hash),
                                                     params)))
    lines.append("\n# End of dump\n")
    return "".join(lines)


def _exists_error(path: str) -> WalletError:
    return WalletError(RPC_INVALID_PARAMETER, "%s already exists. If you are sure this is what "
                       "you want, move it out of the way first" % path)


def check_dump_path(filename: str) -> str:
    """dumpwallet's file as an absolute path; -8 when something is already there."""
    path = os.path.abspath(filename)
    if os.path.lexists(path):
        raise _exists_error(path)
    return path


def write_dump(wallet: Wallet, path: str, now: int, tip: TipInfo) -> None:
    """dumpwallet: the dump to a new file (mode 0600), never over an existing one."""
    text = dump_text(wallet, now, tip)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise _exists_error(path) from None
    except OSError:
        raise WalletError(RPC_INVALID_PARAMETER, "Cannot open wallet dump file") from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def import_dump(wallet: Wallet, lines: List[str], tip_time: int) -> Tuple[int, bool]:
    """importwallet's store step: ``(earliest birth time, every line imported)``."""
    ensure_unlocked(wallet)
    keys = wallet.keys
    params = wallet.params
    time_begin = tip_time
    good = True
    for line in lines:
        if not line or line[0] == "#":
            continue
        fields = line.split(" ")
        if len(fields) < 2:
            continue
        try:
            secret, compressed = decode_wif(fields[0], params)
            pubkey = coincurve.PrivateKey(secret).public_key.format(compressed)
        except (AddressError, ValueError):
            pubkey = None
        if pubkey is not None:
            if keys.have_secret(pubkey):
                continue
            birth = decode_dump_time(fields[1])
            label, labelled = "", True
            for field in fields[2:]:
                if field.startswith("#"):
                    break
                if field in ("change=1", "reserve=1"):
                    labelled = False
                if field.startswith("label="):
                    label, labelled = decode_dump_string(field[6:]), True
            try:
                keys.add_key(secret, compressed, created=birth)
            except Exception:
                good = False
                continue
            if labelled:
                wallet.set_name(p2pkh_address(wallet, pubkey), label, PURPOSE_RECEIVE)
            time_begin = min(time_begin, birth)
        elif is_hex(fields[0]):
            script = bytes.fromhex(fields[0])
            if hash160(script) in keys.scripts:
                continue
            keys.add_script(script)
            birth = decode_dump_time(fields[1])
            if birth > 0:
                time_begin = min(time_begin, birth)
    return time_begin, good


def read_dump_lines(path: str) -> List[str]:
    """importwallet's file, split into lines (bytes that are not UTF-8 kept as escapes)."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="\n") as f:
            return f.read().split("\n")
    except OSError:
        raise WalletError(RPC_INVALID_PARAMETER, "Cannot open wallet dump file") from None
