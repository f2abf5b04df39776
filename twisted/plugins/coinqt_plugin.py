from twisted.application.service import ServiceMaker

coinqt = ServiceMaker("coin-qt", "coin.gui.app", "A coin full node with its GUI in the browser.",
                      "coin-qt")
