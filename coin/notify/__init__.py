"""Notifications to other programs: ZeroMQ publishers and -*notify commands (doc/notify.md).

The topic names live here, free of pyzmq, for the option registry.
"""

#: Core's CZMQAbstractNotifier::DEFAULT_ZMQ_SNDHWM.
DEFAULT_HWM = 1000
#: The topics this node publishes, in Core's (sorted) order of getzmqnotifications: Core
#: 0.17's four and Dash 0.12.3's governance ones.
TOPICS = ("hashblock", "hashgovernanceobject", "hashgovernancevote", "hashtx",
          "rawblock", "rawgovernanceobject", "rawgovernancevote", "rawtx")
#: -help's words for the Dash topics (Core's are "hash block", "raw tx"...).
TOPIC_HELP = {
    "hashgovernanceobject": "hash of governance objects (like proposals)",
    "hashgovernancevote": "hash of governance votes",
    "rawgovernanceobject": "raw governance objects (like proposals)",
    "rawgovernancevote": "raw governance votes",
}
