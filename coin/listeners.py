"""Listening sockets as child services of the node (Twisted endpoint services).

Each socket is a :class:`Listener`: bound in ``privilegedStartService`` (so ``twistd``
binds in the daemon, after its fork) and closed in ``stopService``.  A server's
sockets form a :class:`ListenerGroup`, which binds them one by one the way Core does:
a failure is reported to the group's :meth:`ListenerGroup.failed` hook, which logs it or
stops start-up, and the sockets that did bind are kept.  Port 0 binds a free port;
:attr:`ListenerGroup.addresses` reads the bound ports back.  With ``reuse_port`` the
sockets set SO_REUSEPORT, so several processes (the node and its -rpcworkers) can
listen on one port and the kernel spreads connections over them.
"""

from __future__ import annotations

import socket
from typing import Any, List, Optional, Sequence, Tuple

from twisted.application import service
from twisted.application.internet import StreamServerEndpointService
from twisted.internet import defer, tcp
from twisted.internet.endpoints import TCP4ServerEndpoint, TCP6ServerEndpoint
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IListeningPort, IProtocolFactory


class _ReusePort(tcp.Port):
    """A TCP port whose socket sets SO_REUSEPORT before it binds."""

    def createInternetSocket(self) -> socket.socket:
        sock = super().createInternetSocket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        return sock


class ReusePortEndpoint:
    """A server endpoint (IStreamServerEndpoint) binding ``host``:``port`` with SO_REUSEPORT."""

    def __init__(self, reactor: Any, port: int, interface: str) -> None:
        self._reactor = reactor
        self._port = port
        self._interface = interface

    def listen(self, factory: IProtocolFactory) -> defer.Deferred:
        port = _ReusePort(self._port, factory, interface=self._interface, reactor=self._reactor)
        try:
            port.startListening()
        except CannotListenError:
            return defer.fail()
        return defer.succeed(port)


class Listener(StreamServerEndpointService):
    """One TCP socket on ``host``:``port``.

    A failure to bind is raised from ``privilegedStartService`` (the endpoint service's
    ``_raiseSynchronously``) instead of being logged after the fact, so start-up can
    refuse it with Core's message.
    """

    _raiseSynchronously = True

    def __init__(self, reactor: Any, host: str, port: int, factory: IProtocolFactory,
                 reuse_port: bool = False) -> None:
        endpoint_type = TCP6ServerEndpoint if ":" in host else TCP4ServerEndpoint
        if reuse_port:
            endpoint_type = ReusePortEndpoint
        super().__init__(endpoint_type(reactor, port, interface=host), factory)
        self.host = host
        self.requested_port = port
        #: The listening port once bound.
        self.port: Optional[IListeningPort] = None

    def privilegedStartService(self) -> None:
        first = self._waitingForPort is None
        super().privilegedStartService()
        if first:
            self._waitingForPort.addCallback(self._bound)

    def _bound(self, port: IListeningPort) -> IListeningPort:
        self.port = port
        return port

    @property
    def address(self) -> Tuple[str, int]:
        """``(host, port)`` as bound (the real port when 0 was asked for)."""
        assert self.port is not None, "not listening"
        return self.host, self.port.getHost().port


class ListenerGroup(service.MultiService):
    """The sockets of one server; subclasses say what a failure means (Core's rules)."""

    def __init__(self, reactor: Any, factory: IProtocolFactory,
                 addresses: Sequence[Tuple[str, int]], reuse_port: bool = False) -> None:
        super().__init__()
        self._closed = False
        #: What the sockets serve.
        self.factory = factory
        for host, port in addresses:
            Listener(reactor, host, port, factory, reuse_port).setServiceParent(self)

    def privilegedStartService(self) -> None:
        """Bind each socket; raises what :meth:`failed` or :meth:`none_bound` raise."""
        service.Service.privilegedStartService(self)
        try:
            for listener in list(self):
                try:
                    listener.privilegedStartService()
                except CannotListenError as e:
                    listener.disownServiceParent()
                    self.failed(listener.host, listener.requested_port, e)
                else:
                    self.bound(*listener.address)
            if not self.addresses:
                self.none_bound()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the sockets bound so far (start-up is abandoned; no stopService follows).

        Only the first call acts: a port closes on the reactor's next turn, and closing it
        twice would close its socket twice.
        """
        if self._closed:
            return
        self._closed = True
        for listener in self:
            if listener.port is not None:
                listener.port.stopListening()

    @property
    def addresses(self) -> List[Tuple[str, int]]:
        """The bound ``(host, port)`` pairs."""
        return [listener.address for listener in self if listener.port is not None]

    # ------------------------------------------------------------ hooks

    def bound(self, host: str, port: int) -> None:
        """``host``:``port`` is listening."""

    def failed(self, host: str, port: int, error: CannotListenError) -> None:
        """``host``:``port`` could not be bound; raise to stop start-up."""

    def none_bound(self) -> None:
        """No socket could be bound; raise to stop start-up."""
