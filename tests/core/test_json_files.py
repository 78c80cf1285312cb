"""The config folder's JSON files: an unreadable one is kept aside, never replaced (app.core.json_files)."""

import errno
import os
import stat
import threading
import time

import pytest

from app.core.json_files import keep_aside, write_atomically


def test_files_kept_aside_in_the_same_second_each_keep_their_own_name(tmp_path, monkeypatch):
    """Two unreadable files kept aside within one second: the second replaced the first."""
    monkeypatch.setattr(time, "strftime", lambda _format: "20261205-111111")
    path = tmp_path / "settings.json"
    kept = []
    for text in ("{broken", "[also broken", "{third"):
        write_atomically(path, text)
        kept.append(keep_aside(path))
    assert [p.name for p in kept] == ["settings.unreadable-20261205-111111.json",
                                      "settings.unreadable-20261205-111111-2.json",
                                      "settings.unreadable-20261205-111111-3.json"]
    assert [p.read_text(encoding="utf-8") for p in kept] == ["{broken", "[also broken", "{third"]
    assert not path.exists()


def test_an_export_makes_no_missing_folder(tmp_path):
    """make_folder=False (an export, a path the user picked): a missing folder is refused with
    ENOENT naming the file, as a chat export is (new-user trial 10), and nothing is left behind."""
    path = tmp_path / "none" / "x.json"
    with pytest.raises(OSError) as refused:
        write_atomically(path, "{}", make_folder=False)
    assert (refused.value.errno, refused.value.filename) == (errno.ENOENT, str(path))
    assert list(tmp_path.iterdir()) == []
    write_atomically(path, "{}")  # the config folder's own files: made as before
    assert path.read_text(encoding="utf-8") == "{}"


@pytest.mark.parametrize("depth", [1, 2])
def test_a_file_where_the_config_folder_belongs_is_said_as_a_file_in_the_path(tmp_path, depth):
    """New-user trial: HEADROOM_CONFIG_DIR naming a file said "settings.json: a file of that name is in
    the way", as if a settings.json stood in the way; the file in the way is the folder itself."""
    from app.chat.error_text import os_error_line

    (tmp_path / "config").write_text("not a folder")
    path = tmp_path / "config" / ("sub/" * (depth - 1)) / "settings.json"
    with pytest.raises(OSError) as refused:
        write_atomically(path, "{}")
    assert (refused.value.errno, refused.value.filename) == (errno.ENOTDIR, str(path))
    assert os_error_line(refused.value) == f"{path}: a part of the path is a file, not a folder"
    assert (tmp_path / "config").read_text() == "not a folder"


def test_a_write_that_fails_midway_leaves_the_old_file_whole(tmp_path, file_size_limit):
    """A full disk mid-write: the file keeps its old text, no temp file is left, and the error
    names the file."""
    path = tmp_path / "chat.md"
    path.write_text("the good export", encoding="utf-8")
    with file_size_limit(100), pytest.raises(OSError) as failed:
        write_atomically(path, "new " * 1000, make_folder=False)
    assert (failed.value.errno, failed.value.filename) == (errno.EFBIG, str(path))
    assert path.read_text(encoding="utf-8") == "the good export"
    assert [p.name for p in tmp_path.iterdir()] == ["chat.md"]


def test_a_write_leaves_other_files_and_the_file_s_permissions_alone(tmp_path):
    """The temp file was <stem>.tmp: a user's notes.tmp beside notes.md was overwritten, then renamed
    over notes.md. A replaced file kept by its owner only (0o600) became readable by all."""
    path, theirs = tmp_path / "notes.md", tmp_path / "notes.tmp"
    theirs.write_text("the user's own file", encoding="utf-8")
    path.write_text("old", encoding="utf-8")
    path.chmod(0o600)
    write_atomically(path, "new", make_folder=False)
    assert path.read_text(encoding="utf-8") == "new" and path.stat().st_mode & 0o777 == 0o600
    assert theirs.read_text(encoding="utf-8") == "the user's own file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md", "notes.tmp"]


def test_a_linked_file_is_written_through_its_link(tmp_path):
    """settings.json linked from a dotfiles folder: the file it points to gets the text, the link stays."""
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text("{}", encoding="utf-8")
    link = tmp_path / "settings.json"
    link.symlink_to(real)
    write_atomically(link, '{"a": 1}')
    assert link.is_symlink() and real.read_text(encoding="utf-8") == '{"a": 1}'
    assert sorted(p.name for p in real.parent.iterdir()) == ["settings.json"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_pipe_the_user_names_is_written_into_not_replaced(tmp_path):
    """A device or a pipe (an export to /dev/full, new-user trial 12: as root, the rename put a
    plain file in place of the device) is written as it is; a pipe stands in for a device here."""
    pipe = tmp_path / "export.md"
    os.mkfifo(pipe)
    read: list[bytes] = []
    reader = threading.Thread(target=lambda: read.append(pipe.read_bytes()), daemon=True)
    reader.start()
    write_atomically(pipe, "# Chat\n서울\n", make_folder=False)
    reader.join(timeout=10)
    assert read == ["# Chat\n서울\n".encode()]
    assert stat.S_ISFIFO(pipe.stat().st_mode) and sorted(p.name for p in tmp_path.iterdir()) == ["export.md"]


def test_a_private_file_is_owner_only_from_its_creation_whatever_the_umask(tmp_path, monkeypatch):
    """private=True (the API key file): the temp file is made 0o600 (never readable by others, even
    before a chmod), a replaced file's looser bits are not kept, and new folders are 0o700."""
    made = []
    real_open = os.open

    def recording_open(path, flags, mode=0o777, *args, **kwargs):
        fd = real_open(path, flags, mode, *args, **kwargs)
        made.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return fd

    path = tmp_path / "config" / "api_keys.json"
    old_umask = os.umask(0)
    try:
        monkeypatch.setattr(os, "open", recording_open)
        write_atomically(path, '{"a": "secret"}', private=True)
        path.chmod(0o644)
        write_atomically(path, '{"a": "new"}', private=True)
    finally:
        os.umask(old_umask)
    assert made == [0o600, 0o600]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text() == '{"a": "new"}'
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["api_keys.json"]
