"""The node's HTTP server: the lean HTTP/1.1 channel (:mod:`coin.http.channel`)."""
