"""Core-style arguments (``-name=value``, ``-noname``) and coin.conf.

Stdlib-only and light: coin-cli imports it at start. See doc/config.md.
"""

from coin.config.args import (
    COOKIE_FILENAME,
    NETWORK_ONLY,
    Config,
    default_datadir,
    interpret_bool,
    parse_args,
)
from coin.config.conffile import parse_config_text, read_config_file
from coin.config.errors import ConfigError
from coin.config.networks import NETWORKS, Network
from coin.config.options import CONF_FILENAME, Option, OptionRegistry, add_common_options

__all__ = [
    "CONF_FILENAME", "COOKIE_FILENAME", "NETWORKS", "NETWORK_ONLY", "Config", "ConfigError",
    "Network", "Option", "OptionRegistry", "add_common_options", "default_datadir",
    "interpret_bool", "parse_args", "parse_config_text", "read_config_file",
]
