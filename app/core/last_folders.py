"""Where each kind of file dialog starts: the folder the user last picked for that kind.

A double-clicked app or a PyInstaller bundle runs in a meaningless working directory, so file
dialogs never start there: they start in the folder last used for the same kind of file
(LastFolders, kept in settings.json), else in the user's Documents folder, else in the home
folder (start_folder). Plain data, no Qt.
"""

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path

# the kinds of file dialog, each remembering its own folder
MODEL, ATTACH, EXPORT, DIAGNOSTICS, PRESETS = "model", "attach", "export", "diagnostics", "presets"


@dataclass(frozen=True)
class LastFolders:
    """The folder last used per kind of file dialog, absolute paths ("" = none yet). model: Open
    model's file and folder pickers; attach: Attach…; export: exporting a conversation;
    diagnostics: Save diagnostics; presets: importing and exporting presets."""

    model: str = ""
    attach: str = ""
    export: str = ""
    diagnostics: str = ""
    presets: str = ""

    def folder(self, kind: str) -> str:
        """The folder remembered for `kind` ("" when none); ValueError for an unknown kind."""
        if kind not in _KINDS:
            raise ValueError(f"unknown kind of file dialog: {kind!r}")
        return getattr(self, kind)

    def with_folder(self, kind: str, folder: str | Path) -> "LastFolders":
        """A copy that remembers `folder` (made absolute) for `kind`; ValueError for an unknown kind."""
        self.folder(kind)
        return replace(self, **{kind: str(Path(folder).expanduser().absolute())})

    @classmethod
    def from_json(cls, raw: object) -> "LastFolders":
        """From settings.json; anything that is not a string for a known kind is left out."""
        if not isinstance(raw, dict):
            return cls()
        return cls(**{k: v for k, v in raw.items() if k in _KINDS and isinstance(v, str)})


_KINDS = frozenset(f.name for f in fields(LastFolders))


PSEUDO_FILE_SYSTEMS = ("/proc", "/sys", "/dev") if os.name == "posix" else ()
"""Folders of the kernel's pseudo file systems (Linux procfs, sysfs, devtmpfs; macOS devfs):
their "files" are no documents, and a file dialog opened in one can hang for good: Qt's file
list reads each file to learn its type and a /proc file may never answer (new-user trial: an
export to /proc/x.md remembered "/proc", and every Export dialog after it froze the app)."""


def can_start_in(folder: str | Path) -> bool:
    """Whether a file dialog may open in `folder`: an existing folder (symbolic links followed)
    that is not in one of the PSEUDO_FILE_SYSTEMS or below. Never raises (False on OSError)."""
    try:
        if not folder or not Path(folder).is_dir():
            return False
        real = os.path.realpath(folder)
    except (OSError, ValueError):  # ValueError: a NUL in a hand-edited settings.json
        return False
    return not any(real == root or real.startswith(root + "/") for root in PSEUDO_FILE_SYSTEMS)


def start_folder(remembered: str, *fallbacks: str | Path) -> Path:
    """The first of `remembered` and `fallbacks` (Documents, then home) that a file dialog may
    open in (can_start_in); the home folder when none is (a remembered folder may have been
    deleted, lived on a drive that is gone, or be a pseudo file system such as /proc)."""
    for candidate in (remembered, *fallbacks):
        if can_start_in(candidate):
            return Path(candidate)
    return Path.home()
