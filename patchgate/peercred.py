"""Who is calling on a unix socket: the kernel's credentials of each connection, made visible to
grpcio (issue 41, item 2).

grpcio says only ``unix:`` of a unix-socket caller (``context.peer()``; its auth context is empty
on an insecure channel and carries no credentials on a secure one), so every local client was one
peer and one client's held calls refused every other's. grpcio does, however, name the caller's
own socket address when it has one. So on a platform that gives a connection's credentials
(``SO_PEERCRED``: Linux), the daemon's public socket is this module's: each connection accepted
there is asked the kernel's pid and uid of the process that connected, and its bytes are relayed
to grpcio's listening socket (in a directory only the daemon's uid can enter) over a new
connection whose own address is ``<dir>/c.<uid>.<pid>.<n>``. ``peer_of`` turns grpcio's peer
string back into ``uid=U,pid=P``. A caller cannot choose that name: the relay makes it from the
kernel's answer, and grpcio's socket is out of the caller's reach.

Elsewhere (no ``SO_PEERCRED``) the daemon binds its socket to grpcio directly, and callers it
cannot tell apart share the total bound (see ``patchgate.callguard``).

Relaying costs a thread per direction of each connection and a copy of every byte; connections
are at most :data:`MAX_CONNECTIONS` (beyond it a connection is closed at once).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import socket
import struct
import tempfile
import threading

import structlog

__all__ = ["MAX_CONNECTIONS", "UnixRelay", "peer_of", "supported"]

log = structlog.get_logger("patchgate.peercred")

MAX_CONNECTIONS = 1024
_UCRED = struct.Struct("3i")
_CHUNK = 1 << 16
_NAME = re.compile(r"unix:.*/patchgate-peers-[^/]+/c\.(\d+)\.(\d+)\.\d+")


def supported() -> bool:
    """Whether this platform gives a unix connection's credentials (``SO_PEERCRED``)."""
    return hasattr(socket, "SO_PEERCRED") and hasattr(socket, "AF_UNIX")


def peer_of(peer: str) -> str | None:
    """``uid=U,pid=P`` of a grpcio peer string the relay named, else None."""
    m = _NAME.fullmatch(peer)
    return f"uid={m[1]},pid={m[2]}" if m else None


class UnixRelay:
    """The public unix socket of a daemon: credentials asked, bytes relayed to grpcio's socket."""

    def __init__(self, public_path: str, mode: int) -> None:
        self.public_path = public_path
        self._mode = mode
        self._dir = tempfile.mkdtemp(prefix="patchgate-peers-")  # 0700: the daemon's uid alone
        self.inner_path = os.path.join(self._dir, "grpc.sock")
        self._listener: socket.socket | None = None
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Bind the public socket (mode ``mode``) and accept on it; grpcio must be listening on
        :attr:`inner_path` already."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.public_path)
        lst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        lst.bind(self.public_path)
        os.chmod(self.public_path, self._mode)
        lst.listen(128)
        self._listener = lst
        self._thread = threading.Thread(target=self._accept, name="peer-relay", daemon=True)
        self._thread.start()

    def stop_accepting(self) -> None:
        """Stop accepting and unlink the public socket; relayed connections go on (a drain)."""
        self._stopped.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.public_path)
        if self._thread is not None:
            self._thread.join(5.0)

    def stop(self) -> None:
        """Stop accepting, end every relayed connection, remove grpcio's directory."""
        self.stop_accepting()
        with self._lock:
            conns = list(self._open)
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        shutil.rmtree(self._dir, ignore_errors=True)

    def _accept(self) -> None:
        lst = self._listener
        while lst is not None and not self._stopped.is_set():
            try:
                conn, _ = lst.accept()
            except OSError:
                if self._stopped.is_set():
                    return
                continue
            try:
                self._relay(conn)
            except OSError as exc:
                log.warning("a unix connection could not be relayed", error=str(exc))
                conn.close()

    def _relay(self, conn: socket.socket) -> None:
        pid, uid, _gid = _UCRED.unpack(
            conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
        )
        with self._lock:
            if len(self._open) >= 2 * MAX_CONNECTIONS:
                log.warning("unix connections beyond the bound: closed", uid=uid, pid=pid)
                conn.close()
                return
        inner = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        name = os.path.join(self._dir, f"c.{uid:d}.{pid:d}.{next(self._ids)}")
        try:
            inner.bind(name)
            inner.connect(self.inner_path)
        except OSError:
            inner.close()
            raise
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)  # the address stays the socket's; the file is not needed
        pair = _Pair(conn, inner)
        with self._lock:
            self._open.update((conn, inner))
        for src, dst in ((conn, inner), (inner, conn)):
            threading.Thread(target=self._pump, args=(pair, src, dst), daemon=True).start()

    def _pump(self, pair: _Pair, src: socket.socket, dst: socket.socket) -> None:
        failed = False
        try:
            while chunk := src.recv(_CHUNK):
                dst.sendall(chunk)
        except OSError:
            failed = True
        with contextlib.suppress(OSError):
            # at the end of one direction the other side learns it; at a failure both end
            dst.shutdown(socket.SHUT_RDWR if failed else socket.SHUT_WR)
        if failed:
            with contextlib.suppress(OSError):
                src.shutdown(socket.SHUT_RDWR)
        if pair.ended():
            with self._lock:
                self._open.difference_update(pair.sockets)
            for s in pair.sockets:
                s.close()


class _Pair:
    """A relayed connection: its two sockets are closed when both directions have ended."""

    def __init__(self, outer: socket.socket, inner: socket.socket) -> None:
        self.sockets = (outer, inner)
        self._lock = threading.Lock()
        self._ends = 0

    def ended(self) -> bool:
        """One direction ended; True for the second."""
        with self._lock:
            self._ends += 1
            return self._ends == 2
