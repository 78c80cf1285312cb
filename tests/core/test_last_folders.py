"""Where file dialogs start: the last folder used per kind, else Documents, else home."""

from pathlib import Path

import pytest

from app.core.last_folders import LastFolders, start_folder
from app.core.settings import Settings, load_settings, save_settings


def test_each_kind_remembers_its_own_folder_and_survives_a_restart(tmp_path):
    folders = LastFolders().with_folder("export", tmp_path / "out").with_folder("attach", tmp_path)
    assert (folders.folder("export"), folders.folder("attach"), folders.folder("model")) == (
        str(tmp_path / "out"), str(tmp_path), "")
    with pytest.raises(ValueError, match="unknown kind"):
        folders.with_folder("music", tmp_path)
    path = tmp_path / "settings.json"
    save_settings(Settings(last_folders=folders), path)
    assert load_settings(path).last_folders == folders
    path.write_text('{"last_folders": {"export": 3, "attach": "/x", "music": "/y"}}', encoding="utf-8")
    assert load_settings(path).last_folders == LastFolders(attach="/x")  # the usable part is kept
    path.write_text('{"last_folders": "nonsense"}', encoding="utf-8")
    assert load_settings(path).last_folders == LastFolders()


def test_a_dialog_starts_in_the_first_folder_that_still_exists(tmp_path):
    documents = tmp_path / "Documents"
    documents.mkdir()
    assert start_folder(str(tmp_path), documents) == tmp_path
    assert start_folder(str(tmp_path / "deleted"), documents) == documents  # the drive is gone
    assert start_folder("", "", tmp_path / "none") == Path.home()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="Linux /proc")
def test_a_pseudo_file_system_is_never_a_start_folder(tmp_path):
    """New-user trial: "/proc" remembered after a failed export froze every Export dialog after it
    (Qt's file list read a /proc file that never answered), at every start; the dialog starts in
    the next folder instead, a link into /proc too."""
    from app.core.last_folders import can_start_in

    documents = tmp_path / "Documents"
    documents.mkdir()
    (tmp_path / "proc-link").symlink_to("/proc/self")
    for pseudo in ("/proc", "/proc/self", "/sys", "/sys/kernel", "/dev", str(tmp_path / "proc-link")):
        assert not can_start_in(pseudo), pseudo
        assert start_folder(pseudo, documents) == documents
    assert start_folder("/proc", "/dev") == Path.home()
    assert can_start_in(tmp_path) and can_start_in("/")
    assert not can_start_in("") and not can_start_in(tmp_path / "gone") and not can_start_in("a\x00b")
