"""The exceptions that end a coin-cli command."""


class CliError(Exception):
    """Ends the command: coin-cli prints ``error: <message>`` and exits with status 1."""


class ConnectionFailed(CliError):
    """The server could not be reached or is still warming up; -rpcwait retries these."""


class MissingCredentials(CliError):
    """No -rpcpassword and no cookie yet; -rpcwait waits for a starting node to write it."""
