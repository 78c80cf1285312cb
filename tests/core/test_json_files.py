"""The config folder's JSON files: an unreadable one is kept aside, never replaced (app.core.json_files)."""

import errno
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
