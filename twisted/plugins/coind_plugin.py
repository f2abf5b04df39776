from twisted.application.reactors import Reactor
from twisted.application.service import ServiceMaker

coind = ServiceMaker("coind", "coin.tap", "A coin full node (JSON-RPC, REST, P2P).", "coind")
coin_reactor = Reactor("coin", "coin.eventloop",
                       "epoll, polling briefly before it sleeps (coind's own; -busypoll)")
