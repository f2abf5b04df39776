"""The one exception of the config layer."""


class ConfigError(Exception):
    """A mistake in the arguments or in coin.conf.

    ``str(error)`` is the complete line Core prints (for example ``Error parsing
    command line arguments: Invalid parameter -foo``); the program writes it to
    stderr and exits with status 1.
    """
