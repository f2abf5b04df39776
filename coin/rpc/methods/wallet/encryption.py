"""Encryption methods: encryptwallet, walletpassphrase, walletlock, walletpassphrasechange.

Registered through the ``coin.rpc`` entry point ``wallet_encryption``.  Key
derivation from a passphrase (25,000 SHA-512 rounds) and encryption run on a
thread; the relock after walletpassphrase's timeout belongs to the wallet
service (:meth:`coin.wallet.service.WalletService.unlock`).
"""

from __future__ import annotations

from twisted.internet.defer import Deferred

from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_INVALID_PARAMETER, RPC_MISC_ERROR, RPC_WALLET_ENCRYPTION_FAILED,
    RPC_WALLET_WRONG_ENC_STATE, RPCError,
)
from coin.rpc.methods.wallet import wallet_service
from coin.rpc.registry import INT64, STR, Arg, example_cli, example_rpc, rpc_method
from coin.wallet.wallet import Wallet


def _passphrase(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _require_encrypted(wallet: Wallet, method: str) -> None:
    if not wallet.keys.encrypted:
        raise RPCError(RPC_WALLET_WRONG_ENC_STATE, "Error: running with an unencrypted wallet, "
                       "but %s was called." % method)


@rpc_method(
    "encryptwallet", category="wallet", needs_wallet=True,
    args=[Arg("passphrase", STR, help="The pass phrase to encrypt the wallet with. It must be at "
              "least 1 character, but should be long.")],
    help=("Encrypts the wallet with 'passphrase'. This is for first time encryption.\n"
          "After this, any calls that interact with private keys such as sending or signing \n"
          "will require the passphrase to be set prior the making these calls.\n"
          "Use the walletpassphrase call for this, and then walletlock call.\n"
          "If the wallet is already encrypted, use the walletpassphrasechange call."),
    examples=("\nEncrypt your wallet\n" + example_cli("encryptwallet", '"my pass phrase"')
              + "\nNow set the passphrase to use the wallet, such as for signing or sending "
              "coins\n" + example_cli("walletpassphrase", '"my pass phrase"')
              + "\nNow we can do something like sign\n"
              + example_cli("signmessage", '"address" "test message"')
              + "\nNow lock the wallet again by removing the passphrase\n"
              + example_cli("walletlock")
              + "\nAs a json rpc call\n" + example_rpc("encryptwallet", '"my pass phrase"')))
async def encryptwallet(ctx: RPCContext, passphrase: str) -> str:
    wallet = ctx.wallet
    if wallet.keys.private_keys_disabled:
        raise RPCError(RPC_WALLET_ENCRYPTION_FAILED,
                       "Error: wallet does not contain private keys, nothing to encrypt.")
    if wallet.keys.encrypted:
        raise RPCError(RPC_WALLET_WRONG_ENC_STATE,
                       "Error: running with an encrypted wallet, but encryptwallet was called.")
    if not passphrase:
        # Core 0.17 (the reference node): a runtime_error with this short usage, -1.
        raise RPCError(RPC_MISC_ERROR, "encryptwallet <passphrase>\nEncrypts the wallet with "
                                       "<passphrase>.")
    await wallet_service(ctx).encrypt(wallet, _passphrase(passphrase))
    return ("wallet encrypted; The keypool has been flushed and a new HD seed was generated (if "
            "you are using HD). You need to make a new backup.")


@rpc_method(
    "walletpassphrase", category="wallet", needs_wallet=True,
    args=[Arg("passphrase", STR, help="The wallet passphrase"),
          Arg("timeout", INT64, help="The time to keep the decryption key in seconds; capped at "
              "100000000 (~3 years).")],
    help=("Stores the wallet decryption key in memory for 'timeout' seconds.\n"
          "This is needed prior to performing transactions related to private keys such as "
          "sending coins\n\nNote:\n"
          "Issuing the walletpassphrase command while the wallet is already unlocked will set a "
          "new unlock\ntime that overrides the old one."),
    examples=("\nUnlock the wallet for 60 seconds\n"
              + example_cli("walletpassphrase", '"my pass phrase" 60')
              + "\nLock the wallet again (before 60 seconds)\n" + example_cli("walletlock")
              + "\nAs a JSON-RPC call\n"
              + example_rpc("walletpassphrase", '"my pass phrase", 60')))
async def walletpassphrase(ctx: RPCContext, passphrase: str, timeout: int) -> None:
    wallet = ctx.wallet
    _require_encrypted(wallet, "walletpassphrase")
    if timeout < 0:
        raise RPCError(RPC_INVALID_PARAMETER, "Timeout cannot be negative.")
    if not passphrase:
        raise RPCError(RPC_MISC_ERROR, "walletpassphrase <passphrase> <timeout>\n"
                       "Stores the wallet decryption key in memory for <timeout> seconds.")
    await wallet_service(ctx).unlock(wallet, _passphrase(passphrase), timeout)
    return None


@rpc_method(
    "walletlock", category="wallet", needs_wallet=True,
    help=("Removes the wallet encryption key from memory, locking the wallet.\n"
          "After calling this method, you will need to call walletpassphrase again\n"
          "before being able to call any methods which require the wallet to be unlocked."),
    examples=("\nSet the passphrase for 2 minutes to perform a transaction\n"
              + example_cli("walletpassphrase", '"my pass phrase" 120')
              + "\nPerform a send (requires passphrase set)\n"
              + example_cli("sendtoaddress", '"1M72Sfpbz1BPpXFHz9m3CdqATR44Jvaydd" 1.0')
              + "\nClear the passphrase since we are done before 2 minutes is up\n"
              + example_cli("walletlock")
              + "\nAs a JSON-RPC call\n" + example_rpc("walletlock")))
def walletlock(ctx: RPCContext) -> Deferred:
    wallet = ctx.wallet
    _require_encrypted(wallet, "walletlock")
    return wallet_service(ctx).lock(wallet)


@rpc_method(
    "walletpassphrasechange", category="wallet", needs_wallet=True,
    args=[Arg("oldpassphrase", STR, help="The current passphrase"),
          Arg("newpassphrase", STR, help="The new passphrase")],
    help="Changes the wallet passphrase from 'oldpassphrase' to 'newpassphrase'.",
    examples=(example_cli("walletpassphrasechange", '"old one" "new one"')
              + example_rpc("walletpassphrasechange", '"old one", "new one"')))
async def walletpassphrasechange(ctx: RPCContext, oldpassphrase: str, newpassphrase: str) -> None:
    wallet = ctx.wallet
    _require_encrypted(wallet, "walletpassphrasechange")
    if not oldpassphrase or not newpassphrase:
        raise RPCError(RPC_MISC_ERROR, "walletpassphrasechange <oldpassphrase> <newpassphrase>\n"
                       "Changes the wallet passphrase from <oldpassphrase> to <newpassphrase>.")
    await wallet_service(ctx).change_passphrase(wallet, _passphrase(oldpassphrase),
                                                _passphrase(newpassphrase))
    return None


#: What the ``wallet_encryption`` entry point registers.
METHODS = [encryptwallet, walletpassphrase, walletlock, walletpassphrasechange]
