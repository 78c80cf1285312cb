"""The JSON files Headroom keeps in the config folder (settings.json, presets.json): written whole
or not at all, and one that cannot be read is kept aside for the user, never overwritten by the
next save. Pure Python."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path


def write_atomically(path: Path, text: str, make_folder: bool = True) -> None:
    """Write `text` to `path` through a temp file and a rename, so a crash never leaves half a
    file. OSError names `path`, not the temp file, which is removed (trial 5 found
    "settings.tmp: Is a directory" and the temp file left behind). make_folder: create the missing
    folders above `path` (the config folder); False for a path the user picked (an export), which
    then fails with ENOENT, as a chat export does (new-user trial 10: a preset export made
    /tmp/x/none/ for x.json, a chat export refused it)."""
    tmp = path.with_suffix(".tmp")
    try:
        if make_folder:
            path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        if tmp.is_file():
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


def keep_aside(path: Path) -> Path:
    """Rename the unreadable `path` to <stem>.unreadable-<local time>.json beside it (-2, -3, …
    added when that name is taken: two in one second must not replace the first) and return where
    it went. Raises OSError when it cannot be renamed."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.stem}.unreadable-{stamp}.json")
    number = 1
    while aside.exists():
        number += 1
        aside = path.with_name(f"{path.stem}.unreadable-{stamp}-{number}.json")
    path.replace(aside)
    return aside
