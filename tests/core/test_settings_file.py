"""settings.json written by hand: a file that is no settings object is said in JSON's words, and one
malformed section costs only that section (trial 15)."""

import json
from pathlib import Path

from app.core.backend_settings import REMOTE
from app.core.settings import GenerationSettings, read_settings


def test_a_file_of_null_or_a_list_is_said_in_jsons_words_not_pythons(tmp_path):
    """It read "unreadable ('NoneType' object has no attribute 'get')"."""
    for text, kind in (("null", "null"), ("[1, 2]", "a list"), ('"hi"', "text"), ("7", "a number")):
        path = tmp_path / "settings.json"
        path.write_text(text, encoding="utf-8")
        _settings, note = read_settings(path)
        assert note.reason == f"the file holds {kind}, not a JSON object of settings"
        assert Path(note.kept_as).name.startswith("settings.unreadable-") and not path.exists()
        for kept in tmp_path.glob("settings.unreadable-*"):
            kept.unlink()


def test_a_malformed_generation_section_keeps_the_rest(tmp_path):
    """"generation": [] moved the whole file aside and with it the remote server's URL."""
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"generation": [], "language": "ko",
                                "backend": {"kind": "remote", "remote": {"base_url": "http://gpu-box:8000/v1",
                                                                         "model": "llama"}}}), encoding="utf-8")
    settings, note = read_settings(path)
    assert note is None and path.exists()
    assert settings.generation == GenerationSettings() and settings.language == "ko"
    assert settings.backend.kind == REMOTE and settings.backend.remote.base_url == "http://gpu-box:8000/v1"
