"""Address methods: getnewaddress, getrawchangeaddress, setlabel, addmultisigaddress,
getaddressinfo, keypoolrefill, signmessage, getaddressesbylabel, listlabels and
listaddressgroupings.

Registered through the ``coin.rpc`` entry point ``wallet_addresses``.  Hash160
identifiers (``hdseedid``, ``hdmasterkeyid``) are printed as Core's
``uint160::GetHex`` does, byte-reversed.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from twisted.internet.defer import Deferred

from coin.primitives.address import try_decode_address
from coin.primitives.hashes import is_hex
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER, RPC_WALLET_INVALID_LABEL_NAME, RPCError,
)
from coin.rpc.methods.wallet import label_from_value
from coin.rpc.methods.util import (
    KEY_ARG, multisig_json, multisig_redeem_script, public_key_from_hex,
)
from coin.rpc.registry import ARR, INT, STR, Arg, example_cli, example_rpc, rpc_method
from coin.views.amounts import amount_to_json
from coin.views.wallet import address_info_json
from coin.wallet.access import in_wallet
from coin.wallet.addresses import (
    add_multisig_script, check_can_derive, ensure_unlocked, new_change_address,
    public_key_of_address, refill_keypool, set_label, sign_message_with,
)
from coin.wallet.labels import address_groupings, addresses_with_label, labels


def _address_type(value: Optional[str]) -> None:
    """Core's ParseOutputType: only legacy addresses exist here."""
    if value is not None and value != "legacy":
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Unknown address type '%s'" % value)


_ADDRESS_TYPE_HELP = 'The address type to use. Options are "legacy".'


@rpc_method(
    "getnewaddress", category="wallet", needs_wallet=True,
    args=[Arg("label", STR, default=None, help=(
              'The label name for the address to be linked to. If not provided, the default '
              'label "" is used. It can also be set to the empty string "" to represent the '
              "default label. The label does not need to exist, it will be created if there "
              "is no label by the given name.")),
          Arg("address_type", STR, default=None, help=_ADDRESS_TYPE_HELP + " Default is "
              "legacy.")],
    help=("Returns a new coin address for receiving payments.\n"
          "If 'label' is specified, it is added to the address book \n"
          "so payments received with the address will be associated with 'label'."),
    result='"address"    (string) The new coin address',
    examples=example_cli("getnewaddress") + example_rpc("getnewaddress"))
def getnewaddress(ctx: RPCContext, label: Optional[str], address_type: Optional[str]) -> Deferred:
    wallet = ctx.wallet
    check_can_derive(wallet)
    label = label_from_value(label) if label is not None else ""
    _address_type(address_type)
    return in_wallet(wallet, wallet.new_address, label, write=True)


@rpc_method(
    "getrawchangeaddress", category="wallet", needs_wallet=True,
    args=[Arg("address_type", STR, default=None,
              help=_ADDRESS_TYPE_HELP + " Default is legacy.")],
    help=("Returns a new coin address, for receiving change.\n"
          "This is for use with raw transactions, NOT normal use."),
    result='"address"    (string) The address',
    examples=example_cli("getrawchangeaddress") + example_rpc("getrawchangeaddress"))
def getrawchangeaddress(ctx: RPCContext, address_type: Optional[str]) -> Deferred:
    wallet = ctx.wallet
    check_can_derive(wallet)
    _address_type(address_type)
    return in_wallet(wallet, new_change_address, wallet, write=True)


@rpc_method(
    "setlabel", category="wallet", needs_wallet=True,
    args=[Arg("address", STR, help="The coin address to be associated with a label."),
          Arg("label", STR, help="The label to assign to the address.")],
    help="Sets the label associated with the given address.",
    examples=(example_cli("setlabel", '"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX" "tabby"')
              + example_rpc("setlabel", '"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX", "tabby"')))
def setlabel(ctx: RPCContext, address: str, label: str) -> Deferred:
    wallet = ctx.wallet
    destination = try_decode_address(address, wallet.params)
    if destination is None:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid Coin address")
    label = label_from_value(label)
    return in_wallet(wallet, set_label, wallet, destination, label, write=True)


_MULTISIG_KEYS_EXAMPLE = ('"[\\"16sSauSf5pF2UkUwvKGq4qjNRzBZYqgEL5\\",'
                          '\\"171sgjn4YtPu27adkKGrdDwzRTxnRkBfKV\\"]"')


@rpc_method(
    "addmultisigaddress", category="wallet", needs_wallet=True,
    signature='addmultisigaddress nrequired ["key",...] ( "label" "address_type" )',
    args=[Arg("nrequired", INT, help=(
              "The number of required signatures out of the n keys or addresses.")),
          Arg("keys", ARR, help=(
              "A json array of coin addresses or hex-encoded public keys\n"
              "     [\n"
              '       "address"                  (string) coin address or hex-encoded public '
              "key\n"
              "       ...,\n"
              "     ]")),
          Arg("label", STR, default=None, help="A label to assign the addresses to."),
          Arg("address_type", STR, default=None, help=_ADDRESS_TYPE_HELP + " Default is "
              "legacy.")],
    help=("Add a nrequired-to-sign multisignature address to the wallet. Requires a new "
          "wallet backup.\nEach key is a coin address or hex-encoded public key.\n"
          "This functionality is only intended for use with non-watchonly addresses.\n"
          "See `importaddress` for watchonly p2sh address support.\n"
          "If 'label' is specified, assign address to that label."),
    result=("{\n"
            '  "address":"multisigaddress",    (string) The value of the new multisig '
            "address.\n"
            '  "redeemScript":"script"         (string) The string value of the hex-encoded '
            "redemption script.\n"
            "}"),
    examples=("\nAdd a multisig address from 2 addresses\n"
              + example_cli("addmultisigaddress", "2 " + _MULTISIG_KEYS_EXAMPLE)
              + "\nAs json rpc call\n"
              + example_rpc("addmultisigaddress", "2, " + _MULTISIG_KEYS_EXAMPLE)))
def addmultisigaddress(ctx: RPCContext, nrequired: int, keys: List[Any], label: Optional[str],
                       address_type: Optional[str]) -> Deferred:
    wallet = ctx.wallet
    label = label_from_value(label) if label is not None else ""
    texts = [KEY_ARG.convert(key) for key in keys]

    def add() -> Dict[str, str]:
        # Core's order: the keys (hex, else an address of the wallet's), the type, the script.
        pubkeys = [public_key_from_hex(text) if is_hex(text) and len(text) in (66, 130)
                   else public_key_of_address(wallet, text) for text in texts]
        _address_type(address_type)
        redeem_script = multisig_redeem_script(nrequired, pubkeys)
        add_multisig_script(wallet, redeem_script, label)
        return multisig_json(redeem_script, wallet.params)

    return in_wallet(wallet, add, write=True)


@rpc_method(
    "getaddressinfo", category="wallet", needs_wallet=True,
    args=[Arg("address", STR, help="The coin address to get the information of.")],
    help="Return information about the given coin address. Some information requires the "
         "address\nto be in the wallet.",
    result=(
        "{\n"
        '  "address" : "address",        (string) The coin address validated\n'
        '  "scriptPubKey" : "hex",       (string) The hex encoded scriptPubKey generated by the '
        "address\n"
        '  "ismine" : true|false,        (boolean) If the address is yours or not\n'
        '  "iswatchonly" : true|false,   (boolean) If the address is watchonly\n'
        '  "isscript" : true|false,      (boolean) If the key is a script\n'
        '  "iswitness" : true|false,     (boolean) If the address is a witness address (always '
        "false here)\n"
        '  "script" : "type"             (string, optional) The output script type. Only if '
        '"isscript" is true and the redeemscript is known. Possible types: nonstandard, pubkey, '
        "pubkeyhash, scripthash, multisig, nulldata\n"
        '  "hex" : "hex",                (string, optional) The redeemscript for the p2sh '
        "address\n"
        '  "pubkeys"                     (string, optional) Array of pubkeys associated with '
        'the known redeemscript (only if "script" is "multisig")\n'
        "    [\n"
        '      "pubkey"\n'
        "      ,...\n"
        "    ]\n"
        '  "sigsrequired" : xxxxx        (numeric, optional) Number of signatures required to '
        'spend multisig output (only if "script" is "multisig")\n'
        '  "pubkey" : "publickeyhex",    (string, optional) The hex value of the raw public '
        "key, for single-key addresses (possibly embedded in P2SH)\n"
        '  "embedded" : {...},           (object, optional) Information about the address '
        "embedded in P2SH, if relevant and known. It includes all getaddressinfo output fields "
        'for the embedded address, excluding metadata ("timestamp", "hdkeypath", "hdseedid") '
        'and relation to the wallet ("ismine", "iswatchonly").\n'
        '  "iscompressed" : true|false,  (boolean) If the address is compressed\n'
        '  "label" :  "label"         (string) The label associated with the address, "" is '
        "the default label\n"
        '  "timestamp" : timestamp,      (number, optional) The creation time of the key if '
        "available in seconds since epoch (Jan 1 1970 GMT)\n"
        '  "hdkeypath" : "keypath"       (string, optional) The HD keypath if the key is HD and '
        "available\n"
        '  "hdseedid" : "<hash160>"      (string, optional) The Hash160 of the HD seed\n'
        '  "hdmasterkeyid" : "<hash160>" (string, optional) alias for hdseedid maintained for '
        "backwards compatibility.\n"
        '  "labels"                      (object) Array of labels associated with the address.\n'
        "    [\n"
        "      { (json object of label data)\n"
        '        "name": "labelname" (string) The label\n'
        '        "purpose": "string" (string) Purpose of address ("send" for sending address, '
        '"receive" for receiving address)\n'
        "      },...\n"
        "    ]\n"
        "}"),
    examples=(example_cli("getaddressinfo", '"1PSSGeFHDnKNxiEyFrD1wcEaHr9hrQDDWc"')
              + example_rpc("getaddressinfo", '"1PSSGeFHDnKNxiEyFrD1wcEaHr9hrQDDWc"')))
def getaddressinfo(ctx: RPCContext, address: str) -> Deferred:
    wallet = ctx.wallet
    destination = try_decode_address(address, wallet.params)
    if destination is None:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid address")
    return in_wallet(wallet, address_info_json, wallet, destination)


@rpc_method(
    "keypoolrefill", category="wallet", needs_wallet=True,
    args=[Arg("newsize", INT, default=None, help="The new keypool size (default: -keypool)")],
    help="Fills the keypool.\nRequires wallet passphrase to be set with walletpassphrase call.",
    examples=example_cli("keypoolrefill") + example_rpc("keypoolrefill"))
def keypoolrefill(ctx: RPCContext, newsize: Optional[int]) -> Deferred:
    wallet = ctx.wallet
    check_can_derive(wallet)
    if newsize is not None and newsize < 0:
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, expected valid size.")
    ensure_unlocked(wallet)
    return in_wallet(wallet, refill_keypool, wallet, newsize or None, slow=True).addCallback(
        lambda _: None)


@rpc_method(
    "signmessage", category="wallet", needs_wallet=True,
    args=[Arg("address", STR, help="The coin address to use for the private key."),
          Arg("message", STR, help="The message to create a signature of.")],
    help=("Sign a message with the private key of an address\n"
          "Requires wallet passphrase to be set with walletpassphrase call."),
    result='"signature"          (string) The signature of the message encoded in base 64',
    examples=("\nUnlock the wallet for 30 seconds\n"
              + example_cli("walletpassphrase", '"mypassphrase" 30')
              + "\nCreate the signature\n"
              + example_cli("signmessage", '"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX" "my message"')
              + "\nVerify the signature\n"
              + example_cli("verifymessage", '"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX" "signature" '
                            '"my message"')
              + "\nAs json rpc\n"
              + example_rpc("signmessage", '"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX", "my message"')))
def signmessage(ctx: RPCContext, address: str, message: str) -> Deferred:
    wallet = ctx.wallet
    ensure_unlocked(wallet)
    return in_wallet(wallet, sign_message_with, wallet, address, message)


@rpc_method(
    "getaddressesbylabel", category="wallet", needs_wallet=True,
    args=[Arg("label", STR, help="The label.")],
    help="Returns the list of addresses assigned the specified label.",
    result=("{ (json object with addresses as keys)\n"
            '  "address": { (json object with information about address)\n'
            '    "purpose": "string" (string)  Purpose of address ("send" for sending address, '
            '"receive" for receiving address)\n'
            "  },...\n}"),
    examples=(example_cli("getaddressesbylabel", '"tabby"')
              + example_rpc("getaddressesbylabel", '"tabby"')))
def getaddressesbylabel(ctx: RPCContext, label: str) -> Deferred:
    wallet = ctx.wallet
    label = label_from_value(label)

    def find() -> Dict[str, Any]:
        found = {address: {"purpose": purpose}
                 for address, purpose in addresses_with_label(wallet, label)}
        if not found:
            raise RPCError(RPC_WALLET_INVALID_LABEL_NAME, "No addresses with label " + label)
        return found

    return in_wallet(wallet, find)


@rpc_method(
    "listlabels", category="wallet", needs_wallet=True,
    args=[Arg("purpose", STR, default="", help=(
        "Address purpose to list labels for ('send','receive'). An empty string is the same "
        "as not providing this argument."))],
    help=("Returns the list of all labels, or labels that are assigned to addresses with a "
          "specific purpose."),
    result=("[               (json array of string)\n"
            '  "label",      (string) Label name\n'
            "  ...\n]"),
    examples=("\nList all labels\n" + example_cli("listlabels")
              + "\nList labels that have receiving addresses\n"
              + example_cli("listlabels", "receive")
              + "\nList labels that have sending addresses\n" + example_cli("listlabels", "send")
              + "\nAs json rpc call\n" + example_rpc("listlabels", "receive")))
def listlabels(ctx: RPCContext, purpose: str) -> Deferred:
    wallet = ctx.wallet
    return in_wallet(wallet, labels, wallet, purpose)


@rpc_method(
    "listaddressgroupings", category="wallet", needs_wallet=True,
    help=("Lists groups of addresses which have had their common ownership\n"
          "made public by common use as inputs or as the resulting change\n"
          "in past transactions"),
    result=("[\n  [\n    [\n"
            '      "address",            (string) The coin address\n'
            "      amount,                 (numeric) The amount in COIN\n"
            '      "label"               (string, optional) The label\n'
            "    ]\n    ,...\n  ]\n  ,...\n]"),
    examples=example_cli("listaddressgroupings") + example_rpc("listaddressgroupings"))
def listaddressgroupings(ctx: RPCContext) -> Deferred:
    wallet = ctx.wallet

    def groupings() -> List[Any]:
        return [[[address, amount_to_json(amount)] + ([label] if label is not None else [])
                 for address, amount, label in group] for group in address_groupings(wallet)]

    return in_wallet(wallet, groupings, slow=True)


#: What the ``wallet_addresses`` entry point registers.
METHODS = [getnewaddress, getrawchangeaddress, setlabel, addmultisigaddress, getaddressinfo,
           keypoolrefill, signmessage, getaddressesbylabel, listlabels, listaddressgroupings]
