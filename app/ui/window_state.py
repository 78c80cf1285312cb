"""What the window puts back on the next start: its geometry, docks and toolbar, the sidebar
splitter, the conversation that was open, the composer's unsent drafts, and which start-up
notices were already shown.

Kept in ``session.ini`` (QSettings, INI format) in the config folder beside settings.json
(HEADROOM_CONFIG_DIR moves both): the layout is Qt's own byte blobs (saveGeometry / saveState),
which the settings dataclasses have no business carrying with every request.
"""

import json
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from app.core.paths import config_dir

SESSION_FILE_NAME = "session.ini"  # the file keeps its name: existing layouts come back
# bump when docks or toolbars are renamed/added, so an old layout is not half-applied
LAYOUT_VERSION = 1


class WindowState:
    """Reads and writes session.ini. path: default config_dir()/session.ini. No signals."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path is not None else config_dir() / SESSION_FILE_NAME
        self._settings = QSettings(str(self.path), QSettings.Format.IniFormat)

    def save_window(self, window, splitter, conversation_id: int | None) -> None:
        """Remember `window`'s geometry and dock/toolbar state, `splitter`'s sizes, and the open
        conversation (None: a new, unsaved chat)."""
        s = self._settings
        s.setValue("window/geometry", window.saveGeometry())
        s.setValue("window/state", window.saveState(LAYOUT_VERSION))
        s.setValue("window/splitter", splitter.saveState())
        self.save_open_conversation(conversation_id)  # and writes the file

    def save_open_conversation(self, conversation_id: int | None) -> None:
        """Remember the open conversation now, not only at a clean close: after a crash or a kill
        the next start opens the chat that was open (regression trial: it opened the one open at
        the last clean close, and the answer cut off by the crash was found only in the list)."""
        self._settings.setValue("session/conversation_id", -1 if conversation_id is None else int(conversation_id))
        self._settings.sync()

    def has_layout(self) -> bool:
        """True when an earlier start saved the window's geometry (False: a first start)."""
        value = self._settings.value("window/geometry")
        return isinstance(value, QByteArray) and not value.isEmpty()

    def restore_window(self, window, splitter) -> int | None:
        """Apply what `save_window` stored (nothing on a first start or from an unreadable file)
        and return the conversation id that was open, or None."""
        s = self._settings
        for key, restore in (("window/geometry", window.restoreGeometry),
                             ("window/state", lambda b: window.restoreState(b, LAYOUT_VERSION)),
                             ("window/splitter", splitter.restoreState)):
            value = s.value(key)
            if isinstance(value, QByteArray) and not value.isEmpty():
                restore(value)
        try:
            conversation_id = int(s.value("session/conversation_id", -1))
        except (TypeError, ValueError):
            return None
        return conversation_id if conversation_id >= 0 else None

    def save_drafts(self, drafts: dict[int | None, str]) -> None:
        """Remember the unsent drafts (conversation id → text; None: a new chat)."""
        as_json = {"new" if key is None else str(key): text for key, text in drafts.items() if text}
        self._settings.setValue("session/drafts", json.dumps(as_json, ensure_ascii=False))
        self._settings.sync()

    def drafts(self) -> dict[int | None, str]:
        """The drafts `save_drafts` stored ({} when none or unreadable)."""
        try:
            stored = json.loads(self._settings.value("session/drafts", "{}") or "{}")
            return {None if key == "new" else int(key): str(text) for key, text in stored.items()}
        except (TypeError, ValueError, AttributeError):
            return {}

    def shown_notices(self) -> set[str]:
        """Keys of the start-up notices already shown once (app.engine.loading.startup_notices)."""
        value = self._settings.value("notices/shown", [])
        if isinstance(value, str):  # QSettings INI gives a one-element list back as a string
            return {value} if value else set()
        return set(value or [])

    def remember_notices(self, keys) -> None:
        """Add `keys` to the shown notices."""
        self._settings.setValue("notices/shown", sorted(self.shown_notices() | set(keys)))
        self._settings.sync()
