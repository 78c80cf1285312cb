"""The window's file dialogs, each starting in the folder last used for its kind of file
(app.chat.file_folders) and remembering where the user went: the open pickers the folder of
what was picked (it exists), save_path nothing, as the caller remembers the folder once the
file is written there (new-user trial: a failed export to /proc/x.md remembered "/proc", and
the next Export dialog hung there).

Thin wrappers over QFileDialog's static functions, so each platform shows its native dialog
(Windows, macOS, GTK/KDE portals); Qt's own dialog, where no native one is, writes sizes and
dates in the window's language (app.ui.file_dialog_locale). `folders` is the chat's FileFolders;
None (a widget on its own, in tests) starts in the home folder and remembers nothing.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget

from app.ui.file_dialog_locale import file_dialogs_in_window_language


def _start(folders, kind: str) -> Path:
    return folders.start(kind) if folders is not None else Path.home()


def _remember(folders, kind: str, path: str) -> None:
    if folders is not None and path:
        folders.remember(kind, path)


def save_path(parent: QWidget, folders, kind: str, title: str, name: str, filters: str = "") -> tuple[str, str]:
    """Ask where to save; the dialog proposes `name` (a file name) in the `kind` start folder.
    Returns (path, chosen filter); ("", "") when cancelled. Remembers nothing: a typed path may
    name a folder that is not there, or one that takes no file (/proc), so the caller tells
    `folders.remember` once the file is written."""
    with file_dialogs_in_window_language(parent):
        path, chosen = QFileDialog.getSaveFileName(parent, title, str(_start(folders, kind) / name), filters)
    return path, chosen


def open_paths(parent: QWidget, folders, kind: str, title: str, filters: str = "") -> list[str]:
    """Ask for existing files; [] when cancelled."""
    with file_dialogs_in_window_language(parent):
        paths, _ = QFileDialog.getOpenFileNames(parent, title, str(_start(folders, kind)), filters)
    _remember(folders, kind, paths[0] if paths else "")
    return paths


def open_path(parent: QWidget, folders, kind: str, title: str, filters: str = "") -> str:
    """Ask for one existing file; "" when cancelled."""
    with file_dialogs_in_window_language(parent):
        path, _ = QFileDialog.getOpenFileName(parent, title, str(_start(folders, kind)), filters)
    _remember(folders, kind, path)
    return path


def open_folder(parent: QWidget, folders, kind: str, title: str) -> str:
    """Ask for an existing folder (the native folder chooser); "" when cancelled. The next
    dialog of this kind starts in it."""
    with file_dialogs_in_window_language(parent):
        path = QFileDialog.getExistingDirectory(parent, title, str(_start(folders, kind)))
    _remember(folders, kind, path)
    return path
