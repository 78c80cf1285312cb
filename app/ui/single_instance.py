"""One Headroom per profile: a second launch hands its request to the running window and exits.

Two instances on one profile would write the same SQLite store and settings file. The first
instance holds a `QLockFile` in the data folder (the profile) and listens on a `QLocalServer`
whose name is derived from that folder; a later launch fails to take the lock, connects to the
server, sends one JSON line (``{"model": "<path>"}`` or ``{}``) and exits 0. A lock left by a
crashed process is stale (its PID is gone) and is taken over (QLockFile's own rule). Qt docs:
QLockFile, QLocalServer.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from PySide6.QtCore import QLockFile, QObject, Signal, Slot
from PySide6.QtNetwork import QLocalServer, QLocalSocket

log = logging.getLogger(__name__)

HANDOVER_TIMEOUT_MS = 2000


def server_name(profile_dir: Path) -> str:
    """Local-socket name for a profile folder: short (socket paths are limited to ~100 bytes)
    and distinct per folder and user."""
    digest = hashlib.sha256(str(profile_dir.resolve()).encode()).hexdigest()[:16]
    return f"headroom-{digest}"


class SingleInstance(QObject):
    """Holds the profile's lock while the app runs.

    Signals:
        activation_requested(str): another launch asked this one to come forward; the argument is
            the model path it was given ("" for none).
    """

    activation_requested = Signal(str)

    def __init__(self, profile_dir: Path, parent: QObject | None = None):
        super().__init__(parent)
        try:
            profile_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # said by what cannot be saved there (the store's notice), not here
            log.warning("single instance: cannot create %s: %s", profile_dir, exc)
        self._name = server_name(profile_dir)
        self._lock = QLockFile(str(profile_dir / "headroom.lock"))
        self._lock.setStaleLockTime(0)  # stale only when its process is gone, never by age
        self._server: QLocalServer | None = None

    def acquire(self) -> bool:
        """Take the profile: True when this process is the only instance (and now listens for
        later launches), False when another instance holds it."""
        if not self._lock.tryLock(100):
            if self._lock.error() == QLockFile.LockError.LockFailedError:
                return False  # another process holds it
            # the folder cannot be written (trial 4: a read-only home said "already running" of no
            # process at all): run unguarded; the store and the settings say what is not saved
            log.warning("single instance: cannot create the lock file (%s); running without it",
                        self._lock.error().name)
            return True
        QLocalServer.removeServer(self._name)  # a socket left by a crash; we hold the lock
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not self._server.listen(self._name):
            log.warning("single instance: cannot listen on %s: %s", self._name, self._server.errorString())
        self._server.newConnection.connect(self._on_new_connection)
        return True

    def hand_over(self, model: Path | None) -> bool:
        """From a second launch: ask the running instance to come forward (and open `model`).
        True when it acknowledged in time."""
        socket = QLocalSocket()
        socket.connectToServer(self._name)
        if not socket.waitForConnected(HANDOVER_TIMEOUT_MS):
            return False
        payload = {"model": str(model.resolve())} if model is not None else {}
        socket.write(json.dumps(payload).encode() + b"\n")
        delivered = socket.waitForBytesWritten(HANDOVER_TIMEOUT_MS)
        socket.disconnectFromServer()
        return delivered

    def release(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server.deleteLater()
            self._server = None
        self._lock.unlock()

    @Slot()
    def _on_new_connection(self) -> None:
        while self._server is not None and (socket := self._server.nextPendingConnection()):
            # the launching process writes its one line right after connecting
            line = socket.readLine() if socket.waitForReadyRead(HANDOVER_TIMEOUT_MS) else b""
            socket.disconnectFromServer()
            socket.deleteLater()
            self.activation_requested.emit(_requested_model(bytes(line)))


def _requested_model(line: bytes) -> str:
    """The model path in a hand-over line ("" when none or unreadable)."""
    try:
        request = json.loads(line.decode() or "{}")
    except ValueError:
        return ""
    model = request.get("model", "") if isinstance(request, dict) else ""
    return model if isinstance(model, str) else ""
