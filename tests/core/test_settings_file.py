"""settings.json written by hand: a file that is no settings object is said in JSON's words, and one
malformed section costs only that section (trial 15)."""

import json
from pathlib import Path

import pytest

from app.core.backend_settings import REMOTE, BackendSettings, RemoteSettings
from app.core.settings import (
    NOT_AN_OBJECT,
    GenerationSettings,
    UnusableSettings,
    UnusableValue,
    logical_cores,
    read_settings,
)


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
    assert note == UnusableSettings((UnusableValue("generation", NOT_AN_OBJECT, "[]"),)) and path.exists()
    assert str(note) == "Settings: generation [] is not an object of settings; the defaults are used."
    assert settings.generation == GenerationSettings() and settings.language == "ko"
    assert settings.backend.kind == REMOTE and settings.backend.remote.base_url == "http://gpu-box:8000/v1"


def write_generation(tmp_path: Path, generation: str) -> Path:
    path = tmp_path / "settings.json"
    path.write_text(f'{{"generation": {generation}, "language": "ko"}}', encoding="utf-8")
    return path


def test_unusable_values_are_noted_in_plain_words_and_logged_at_info_only(tmp_path, caplog):
    """New-user trial: `"temperature": "hot"` printed the raw log line "WARNING app.core.settings …:
    settings: temperature='hot' unusable (could not convert string to float: 'hot'); using the
    default" twice on the command line, and the window said nothing. Now read_settings returns
    what the caller says, once, naming the field and the value used; the log has it at INFO."""
    path = write_generation(tmp_path, '{"temperature": "hot", "kept_chat_cache_mib": NaN, "top_p": Infinity, '
                                      '"context_tokens": 1.5, "top_k": true, "system_prompt": 42, "seed": "soon", '
                                      '"max_new_tokens": 300}')
    with caplog.at_level("DEBUG", logger="app.core.settings"):
        settings, note = read_settings(path)
    assert settings.generation == GenerationSettings(max_new_tokens=300) and settings.language == "ko"
    assert isinstance(note, UnusableSettings) and path.exists()  # the file stays: only these values are not used
    assert str(note) == (
        'Settings: temperature "hot" is not a number; the default 0.7 is used. '
        "kept_chat_cache_mib NaN is not a number; the default 4096 is used. "
        "top_p Infinity is not a finite number; the default 0.95 is used. "
        "context_tokens 1.5 is not a whole number; the default 0 is used. "
        "top_k true is not a whole number; the default 0 is used. "
        'system_prompt 42 is not text; the default "You are a helpful assistant." is used. '
        'seed "soon" is not a number; the default random is used.')  # re-trial: "the default null"
    assert "\n" not in str(note)  # one line on stderr
    assert [r.levelname for r in caplog.records] == ["INFO"] * 7


@pytest.mark.parametrize(("generation", "said"), [
    ('{"temperature": 99}', "temperature 99 is out of range; 2.0 is used."),
    ('{"top_p": 0}', "top_p 0 is out of range; 0.01 is used."),
    ('{"max_new_tokens": 0}', "max_new_tokens 0 is out of range; the default 512 is used."),
    ('{"context_tokens": -5}', "context_tokens -5 is out of range; the default 0 is used."),
    ('{"repetition_penalty": 0}', "repetition_penalty 0 is out of range; the default 1.0 is used."),
    ('{"repetition_penalty": -2}', "repetition_penalty -2 is out of range; the default 1.0 is used."),
    ('{"repetition_penalty": 0.2}', "repetition_penalty 0.2 is out of range; 0.5 is used."),
    ('{"seed": 1.5}', "seed 1.5 is not a whole number; the default random is used."),
    ('{"seed": 99999999999}', "seed 99999999999 is out of range; 2147483647 is used."),
    ('{"cpu_threads": 100000}', f"cpu_threads 100000 is out of range; {logical_cores()} is used."),
])
def test_a_value_clamped_into_range_is_said_with_the_value_used(tmp_path, generation, said):
    """temperature 99 became 2.0 with no word: said the same way, with the value used instead."""
    _settings, note = read_settings(write_generation(tmp_path, generation))
    assert str(note) == f"Settings: {said}"


@pytest.mark.parametrize(("written", "used"), [(0, 1.0), (-3, 1.0), (1e-9, 0.5), (0.2, 0.5), (1.3, 1.3), (9, 2.0)])
def test_a_repetition_penalty_of_zero_or_less_is_off_not_a_push_to_repeat(written, used):
    """New-user re-trial: 0, which means nothing in the CTRL formula, became 0.5, which strongly favours
    repeats (SmolLM2 echoed its system prompt). 0 or less is the default 1.0, off, as max_new_tokens ≤ 0
    is its default; a value in (0, 0.5) still becomes 0.5."""
    assert GenerationSettings(repetition_penalty=written).validated().repetition_penalty == used


def test_values_read_as_written_are_not_said(tmp_path):
    """-1 is the seed other tools write for "random" (it reads so); "300" and 4096.0 are those numbers."""
    path = write_generation(tmp_path, '{"temperature": 0.25, "seed": -1, "max_new_tokens": "300", '
                                      f'"context_tokens": 4096.0, "top_p": 1, "system_prompt": "{"x" * 60}", '
                                      '"future_knob": "hot"}')
    settings, note = read_settings(path)
    assert note is None
    assert (settings.generation.seed, settings.generation.max_new_tokens) == (None, 300)


def test_a_long_value_is_cut_in_what_is_said(tmp_path):
    _settings, note = read_settings(write_generation(tmp_path, f'{{"system_prompt": ["{"x" * 500}"]}}'))
    (value,) = note.values
    assert len(value.written) == 40 and value.written.startswith('["xxx') and value.written.endswith("…")


def test_values_outside_generation_are_said_and_one_bad_value_keeps_the_server(tmp_path):
    """New-user trial: `"retries": "many"` made the whole backend local with no word, and the next
    save wrote the server's URL away; NaN passed every clamp as the read timeout; "language": "kr"
    and "appearance": "darkk" were followed as the system's, unsaid."""
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({
        "language": "kr", "appearance": "darkk",
        "backend": {"kind": "remote", "remote": {"base_url": "http://gpu-box:8000/v1", "model": "llama",
                                                 "retries": "many", "read_timeout_s": float("nan"),
                                                 "connect_timeout_s": 9999, "backoff_s": True}}}), encoding="utf-8")
    settings, note = read_settings(path)
    assert settings.backend == BackendSettings(REMOTE, RemoteSettings("http://gpu-box:8000/v1", "llama",
                                                                      connect_timeout_s=600.0))
    assert (settings.language, settings.appearance) == ("auto", "system")
    assert str(note) == (
        'Settings: backend.remote.read_timeout_s NaN is not a number; the default 120.0 is used. '
        'backend.remote.retries "many" is not a number; the default 3 is used. '
        "backend.remote.backoff_s true is not a number; the default 0.5 is used. "
        "backend.remote.connect_timeout_s 9999 is out of range; 600.0 is used. "
        'language "kr" is not one of its choices; the default "auto" is used. '
        'appearance "darkk" is not one of its choices; the default "system" is used.')


@pytest.mark.parametrize(("backend", "said"), [
    ('{"kind": "remotee"}', 'backend.kind "remotee" is not one of its choices; the default "local" is used.'),
    ('[1]', "backend [1] is not an object of settings; the defaults are used."),
    ('{"kind": "remote", "remote": "x"}', 'backend.remote "x" is not an object of settings; the defaults are used.'),
    ('{"kind": "remote", "remote": {"model": 12, "retries": 2.5}}',
     'backend.remote.model 12 is not text; the default "" is used. '
     "backend.remote.retries 2.5 is not a whole number; the default 3 is used."),
])
def test_an_unusable_backend_value_is_said_with_its_path(tmp_path, backend, said):
    path = tmp_path / "settings.json"
    path.write_text(f'{{"backend": {backend}}}', encoding="utf-8")
    assert str(read_settings(path)[1]) == f"Settings: {said}"


def test_a_boolean_is_no_number_of_generation_either(tmp_path):
    """float(true) is 1.0: "temperature": true was read as 1 without a word."""
    settings, note = read_settings(write_generation(tmp_path, '{"temperature": true, "top_p": "0.5"}'))
    assert (settings.generation.temperature, settings.generation.top_p) == (0.7, 0.5)
    assert str(note) == "Settings: temperature true is not a number; the default 0.7 is used."
