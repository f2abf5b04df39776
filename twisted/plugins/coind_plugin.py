from twisted.application.service import ServiceMaker

coind = ServiceMaker("coind", "coin.tap", "A coin full node (JSON-RPC, REST, P2P).", "coind")
