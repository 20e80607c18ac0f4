"""``rma emulator --port N``: a fixed loopback port passed through to an emulator's own.

The emulators listen on a free port each, chosen at start. A person who wants the same URL
every time (in a ``.env`` file, an IDE's run settings) names a port; this relay listens
there and passes every connection's bytes both ways, unchanged, to the emulator's port - a
``Host`` header and a SigV4 signature made for the named port reach the emulator as they
were sent. A connection's two directions are two threads, ended when either side closes.
"""

from __future__ import annotations

import contextlib
import socket
import threading

__all__ = ["PortRelay"]

CHUNK = 65536


class PortRelay:
    """Listens on ``127.0.0.1:port`` (0: a free port; ``port`` then says which) and relays
    each connection to ``127.0.0.1:target``. :meth:`close` stops listening and cuts the
    connections still open. ``OSError`` at construction when the port is taken."""

    def __init__(self, port: int, target: int) -> None:
        self._listener = socket.create_server(("127.0.0.1", port))
        self.port: int = self._listener.getsockname()[1]
        self._target = target
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._closed = False
        self._accepting = threading.Thread(
            target=self._accept, name=f"rma-relay-{self.port}", daemon=True
        )
        self._accepting.start()

    def close(self) -> None:
        """Stop listening; cut every relayed connection."""
        with self._lock:
            self._closed = True
            sockets = list(self._open)
            self._open.clear()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._accepting.join(5)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self._target))
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._closed:
                    client.close()
                    upstream.close()
                    return
                self._open.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(
                    target=self._pump, args=(source, sink), name="rma-relay-pump", daemon=True
                ).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        """Copy ``source`` to ``sink`` until ``source`` ends, then end ``sink``'s writing
        (a reset is passed on as a close of both)."""
        try:
            while chunk := source.recv(CHUNK):
                sink.sendall(chunk)
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)
        except OSError:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        finally:
            self._forget(source)

    def _forget(self, sock: socket.socket) -> None:
        """Close a socket once both its directions are done with it (its pair closes it)."""
        with self._lock:
            if sock not in self._open:
                return
            self._open.discard(sock)
        with contextlib.suppress(OSError):
            sock.close()
