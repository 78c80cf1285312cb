"""The config folder's JSON files: an unreadable one is kept aside, never replaced (app.core.json_files)."""

import time

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
