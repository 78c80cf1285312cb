"""The folder each kind of file dialog starts in, remembered across runs (app.core.last_folders).

The window's pickers ask `start(kind)` before they open and tell `remember(kind, path)` the file
picked to open (it exists) or, for a save, the file once it is written; the folder goes into
the chat's settings and settings.json at once, so the next run starts there too. A folder no
dialog should open in (gone, or a pseudo file system such as /proc:
app.core.last_folders.can_start_in) is never remembered, and never started in.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QStandardPaths

from app.core.last_folders import MODEL, can_start_in, start_folder
from app.core.paths import models_dir

if TYPE_CHECKING:
    from app.chat.chat import Chat


def documents_folder() -> str:
    """The user's Documents folder as the platform names it ("" when it has none)."""
    return QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)


class FileFolders:
    """Start folders for the chat's file dialogs (kinds: app.core.last_folders). No signals."""

    def __init__(self, chat: Chat):
        self._chat = chat

    def start(self, kind: str) -> Path:
        """Where a `kind` dialog opens: the folder last used for it, else (model pickers) the
        user data folder's models folder where `python -m app.install_model` puts models, else
        Documents, else home."""
        first = (models_dir(),) if kind == MODEL else ()
        return start_folder(self._chat.settings.last_folders.folder(kind), *first, documents_folder(), Path.home())

    def remember(self, kind: str, picked: str | Path) -> None:
        """`picked` (a file that exists or was just written, or a folder that exists) was
        chosen in a `kind` dialog: the next one starts in its folder. Saved to settings.json when
        it changed; left as it was when that folder is one no dialog should open in
        (can_start_in: not there, or /proc, where the next dialog hung for good)."""
        picked = Path(picked)
        try:
            folder = picked if picked.is_dir() else picked.parent
        except OSError:  # a name too long for the file system (trial 7): its folder is still the one
            folder = picked.parent
        if not can_start_in(folder):
            return
        chat = self._chat
        folders = chat.settings.last_folders.with_folder(kind, folder)
        if folders != chat.settings.last_folders:
            chat.save_defaults(lambda settings: replace(settings, last_folders=folders))
