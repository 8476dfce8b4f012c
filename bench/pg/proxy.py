"""A counting TCP proxy: round trips and statements of PostgreSQL clients."""

from __future__ import annotations

import selectors
import socket
import struct
import threading
from typing import Any

__all__ = ["CountingProxy"]


class CountingProxy:
    """A TCP proxy in front of PostgreSQL that counts, over all its connections, round
    trips and statements (Execute and Query messages of the frontend protocol; the server
    must not use SSL).

    A round trip: the client sends after having received, and after having asked for a
    response (its last message was a Sync, a Flush, a simple Query or the start-up
    message). The second condition keeps a large result from counting twice: the server
    streams rows once its send buffer fills, which may be before the client's Flush or
    Sync of the same request has reached it."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.round_trips = 0
        self.statements = 0
        self._lock = threading.Lock()
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def snapshot(self) -> tuple[int, int]:
        with self._lock:
            return self.round_trips, self.statements

    def _serve(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.listener, selectors.EVENT_READ, None)
        peers: dict[socket.socket, tuple[socket.socket, dict[str, Any], bool]] = {}
        while not self._stop:
            for key, _ in sel.select(timeout=0.2):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self.listener:
                    client, _ = self.listener.accept()
                    server = socket.create_connection(self.target)
                    for s in (client, server):
                        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    state: dict[str, Any] = {
                        "last": "server",
                        "buf": b"",
                        "started": False,
                        "waiting": True,
                    }
                    peers[client] = (server, state, True)
                    peers[server] = (client, state, False)
                    sel.register(client, selectors.EVENT_READ, None)
                    sel.register(server, selectors.EVENT_READ, None)
                    continue
                if sock not in peers:  # closed with its peer earlier in this round
                    continue
                other, state, from_client = peers[sock]
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    for s in (sock, other):
                        sel.unregister(s)
                        s.close()
                        peers.pop(s, None)
                    continue
                with self._lock:
                    if from_client:
                        if state["last"] == "server" and state["waiting"]:
                            self.round_trips += 1
                        state["last"] = "client"
                        self.statements += self._parse(state, data)
                    else:
                        state["last"] = "server"
                other.sendall(data)

    @staticmethod
    def _parse(state: dict[str, Any], data: bytes) -> int:
        buf = state["buf"] + data
        count = 0
        state["waiting"] = False  # until a complete message that asks for a response
        while True:
            if not state["started"]:  # untyped: SSL/GSS requests, then the startup message
                if len(buf) < 8:
                    break
                length, code = struct.unpack("!ii", buf[:8])
                if len(buf) < length:
                    break
                buf = buf[length:]
                if code not in (80877103, 80877104, 80877102):
                    state["started"] = True
                state["waiting"] = True
                continue
            if len(buf) < 5:
                break
            kind = buf[:1]
            (length,) = struct.unpack("!i", buf[1:5])
            if len(buf) < 1 + length:
                break
            if kind in (b"E", b"Q"):
                count += 1
            state["waiting"] = kind in (b"S", b"H", b"Q", b"p")
            buf = buf[1 + length :]
        state["buf"] = buf
        return count

    def close(self) -> None:
        self._stop = True
        self._thread.join()
        self.listener.close()
