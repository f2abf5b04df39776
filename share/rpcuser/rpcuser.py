#!/usr/bin/env python3
"""Create an rpcauth entry for coin.conf: ``rpcuser.py <username> [<password>]``.

Without a password one is generated; ``-`` prompts for it. The output matches
Core's share/rpcauth/rpcauth.py, and so do the entries (see coin/config/rpcauth.py).
"""

import os
import sys
from argparse import ArgumentParser
from getpass import getpass

# Run from a source tree without installing: the package is two levels up.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from coin.config.rpcauth import generate_password, make_rpcauth  # noqa: E402


def main() -> None:
    parser = ArgumentParser(description="Create login credentials for a JSON-RPC user")
    parser.add_argument("username", help="the username for authentication")
    parser.add_argument("password", nargs="?", help="leave empty to generate a random "
                        'password or specify "-" to prompt for password')
    args = parser.parse_args()
    if not args.password:
        args.password = generate_password()
    elif args.password == "-":
        args.password = getpass()
    print("String to be appended to coin.conf:")
    print("rpcauth=" + make_rpcauth(args.username, args.password))
    print("Your password:\n" + args.password)


if __name__ == "__main__":
    main()
