"""The JSON files Headroom keeps in the config folder (settings.json, presets.json), and the files
the user exports: written whole or not at all, and one that cannot be read is kept aside for the
user, never overwritten by the next save. Pure Python."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import time
from pathlib import Path


def write_atomically(path: Path, text: str, make_folder: bool = True, private: bool = False) -> None:
    """Write `text` (UTF-8) to `path` whole or not at all: into a new temp file beside it, flushed
    to disk, then renamed over it, so a full disk or a kill mid-write leaves the old file as it
    was (a chat export wrote straight into the file and left it cut short). A replaced file keeps
    its permission bits; a symbolic link is written through (the file it points to is replaced,
    as a plain write did: a dotfiles folder may link settings.json). OSError names `path`, not the
    temp file, which is removed (trial 5 found "settings.tmp: Is a directory" and the temp file
    left behind). make_folder: create the missing folders above `path` (the config folder); False
    for a path the user picked (an export), which then fails with ENOENT, as a chat export does
    (new-user trial 10: a preset export made /tmp/x/none/ for x.json, a chat export refused it).
    A device or a pipe is written directly, never replaced. private: an owner-only file (0o600 from
    its creation, whatever the umask or the replaced file's bits; its new folders 0o700): a secret
    is never readable by others, not even for the moment before a chmod."""
    data = text.encode("utf-8")  # before anything is touched: text it cannot hold changes no file
    tmp = None
    try:
        target = Path(os.path.realpath(path)) if path.is_symlink() else path
        if make_folder:
            try:
                target.parent.mkdir(parents=True, exist_ok=True, **({"mode": 0o700} if private else {}))
            except FileExistsError as exc:  # a file where the folder belongs, not one named like `path`
                # (new-user trial: "settings.json: a file of that name is in the way" for a config folder)
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(target.parent)) from exc
        with contextlib.suppress(FileNotFoundError):
            mode = target.stat().st_mode
            if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
                # a device or a pipe the user named (/dev/full, /dev/null): written as they are; a
                # rename would put a plain file in its place (new-user trial 12, as root: /dev/full)
                with open(target, "wb") as file:
                    file.write(data)
                return
        # a name of its own (O_EXCL), hidden: "<stem>.tmp" was overwritten, then renamed away, when
        # the user had a file of that name beside an export. The stem is cut to fit 255 bytes.
        name = target.with_name(f".{target.stem[:50]}.{secrets.token_hex(4)}.tmp")
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                     0o600 if private else 0o666)
        tmp = name
        if private and hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)  # the umask may only take bits away; this says exactly which stay
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())  # on disk before the rename: a power cut leaves the old or the new
        if not private:
            with contextlib.suppress(FileNotFoundError):
                os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        os.replace(tmp, target)
    except BaseException as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        if isinstance(exc, OSError):
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise


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
