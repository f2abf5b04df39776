"""coin-cli's entry point: options, one JSON-RPC call, Core's output and exit status.

Exit status: 0 on success; the absolute RPC error code (mod 256, as the OS
keeps it: -32601 -> 89) on an RPC error; 1 for anything else.
"""

from __future__ import annotations

import os
import sys
import time

from coin.config import Config, ConfigError
from coincli import client, transport
from coincli.errors import CliError, ConnectionFailed, MissingCredentials
from coincli.options import cli_options, usage


def main(argv: list[str] | None = None) -> int:
    """Console entry point (``coin-cli``)."""
    try:
        return run(sys.argv[1:] if argv is None else argv,
                   sys.stdin.buffer, sys.stdout.buffer, sys.stderr.buffer)
    except BrokenPipeError:  # the reader went away (coin-cli getblock ... | head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def run(argv: list[str], stdin, stdout, stderr, post=transport.post, sleep=time.sleep,
        environ: dict[str, str] | None = None) -> int:
    """coin-cli with its streams (binary files), transport and clock passed in."""
    registry = cli_options()
    config = Config(registry, environ)
    try:
        config.parse_command_line(argv)
        if not argv or any(config.is_set(name) for name in ("?", "h", "help", "version")):
            _write(stdout, usage(registry, version_only=config.is_set("version")))
            if not argv:
                _write(stderr, "Error: too few parameters\n")
                return 1
            return 0
        config.read_config_files()
    except ConfigError as e:
        _write(stderr, "%s\n" % e)
        return 1
    try:
        text, status = command(config, stdin, post, sleep)
    except CliError as e:
        text, status = "error: %s" % e, 1
    if text:
        _write(stdout if status == 0 else stderr, text + "\n")
    return status & 0xFF


def command(config: Config, stdin, post, sleep) -> tuple[str, int]:
    """Core's CommandLineRPC: read -stdin input, call (retrying under -rpcwait), render."""
    if config.get_bool("stdinrpcpass"):
        password = _read_line(stdin)
        if password is None:
            raise CliError("-stdinrpcpass specified but failed to read from standard input")
        config.force_set("rpcpassword", password)
    args = list(config.args)
    if config.get_bool("stdin"):
        args += _read_lines(stdin)
    if not args and client.handler_kind(config) == client.DEFAULT:
        raise CliError("too few parameters (need at least command)")
    wait = config.get_bool("rpcwait")
    while True:
        try:
            return client.render(_call(config, args, post), wait)
        except (ConnectionFailed, MissingCredentials):
            # Under -rpcwait a node that is still starting has no cookie yet: wait for it too
            # (Core 0.17 gives up at once there; later versions wait).
            if not wait:
                raise
            sleep(1)


def _call(config: Config, args: list[str], post) -> dict:
    """One call; for -generate two: getnewaddress, then generatetoaddress (Core 0.21)."""
    if client.handler_kind(config) != client.GENERATE:
        return client.call(config, args, post)
    address = client.call(config, ["getnewaddress"], post, kind=client.DEFAULT)
    if address.get("error") is not None:
        return address
    return client.call(config, client.generate_args(address.get("result"), args), post)


def _read_line(stdin) -> str | None:
    line = stdin.readline()
    if not line:
        return None
    return line.rstrip(b"\n").decode("utf-8", "surrogateescape")


def _read_lines(stdin) -> list[str]:
    """The remaining lines, split on LF as std::getline does (no empty last line)."""
    data = stdin.read()
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [line.decode("utf-8", "surrogateescape") for line in lines]


def _write(stream, text: str) -> None:
    stream.write(text.encode("utf-8", "replace"))
    stream.flush()
