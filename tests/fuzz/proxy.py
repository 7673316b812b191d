"""A TCP proxy (client -> proxy -> broker) that records the request frames clients send."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Recorded:
    """One request frame (without its size prefix) and the client session that sent it."""

    session: str
    payload: bytes


class RecordingProxy:
    """Forwards every connection to ``target``; while ``session`` is set, records requests."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int]) -> None:
        self.listen = listen
        self.target = target
        self.session: str | None = None
        self.frames: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = socket.create_server(listen, reuse_port=False)
        self._server.settimeout(0.2)
        self._stopping = threading.Event()
        self._sockets: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True)

    def start(self) -> RecordingProxy:
        self._acceptor.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._acceptor.join(5)
        self._server.close()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in self._threads:
            thread.join(5)

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            client.settimeout(None)
            with self._lock:
                self._sockets.update((client, upstream))
                self._threads = [t for t in self._threads if t.is_alive()]
            done = threading.Barrier(2, action=lambda c=client, u=upstream: self._close(c, u))
            for args in ((client, upstream, True, done), (upstream, client, False, done)):
                thread = threading.Thread(target=self._pump, args=args, daemon=True)
                self._threads.append(thread)
                thread.start()

    def _close(self, *sockets: socket.socket) -> None:
        with self._lock:
            self._sockets.difference_update(sockets)
        for sock in sockets:
            sock.close()

    def _pump(self, src: socket.socket, dst: socket.socket, requests: bool,
              done: threading.Barrier) -> None:
        pending = bytearray()
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                if requests:
                    pending += data
                    self._take_frames(pending)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(threading.BrokenBarrierError):
                done.wait(10)

    def _take_frames(self, pending: bytearray) -> None:
        while len(pending) >= 4:
            (size,) = struct.unpack_from(">i", pending)
            if size < 0 or len(pending) < 4 + size:
                return
            payload = bytes(pending[4 : 4 + size])
            del pending[: 4 + size]
            session = self.session
            if session is not None:
                with self._lock:
                    self.frames.append(Recorded(session, payload))
