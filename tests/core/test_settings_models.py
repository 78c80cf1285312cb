"""Recent models and per-model permissions in settings.json."""

import json
import os
from dataclasses import replace

import pytest

from app.core.settings import (
    DEFAULT_SYSTEM_PROMPT,
    MAX_CONTEXT_TOKENS,
    MAX_RECENT_MODELS,
    GenerationSettings,
    ModelPermissions,
    Settings,
    load_settings,
    model_key,
    save_settings,
)


def test_recent_models_most_recent_first_without_duplicates(tmp_path):
    settings = Settings()
    for name in ("a", "b", "a", "c"):
        settings = settings.with_recent_model(tmp_path / name)
    assert settings.recent_models == tuple(str(tmp_path / n) for n in ("c", "a", "b"))
    assert settings.last_model_path == str(tmp_path / "c")


def test_recent_models_are_capped(tmp_path):
    settings = Settings()
    for i in range(MAX_RECENT_MODELS + 3):
        settings = settings.with_recent_model(tmp_path / f"m{i}")
    assert len(settings.recent_models) == MAX_RECENT_MODELS
    assert settings.recent_models[0] == str(tmp_path / f"m{MAX_RECENT_MODELS + 2}")


def test_permissions_are_per_model_and_off_by_default(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    settings = Settings().with_permissions(ModelPermissions(str(a), allow_pickle=True))
    assert settings.permissions_for(a) == ModelPermissions(str(a), False, True)
    assert settings.permissions_for(b) == ModelPermissions(str(b), False, False)
    settings = settings.with_permissions(ModelPermissions(str(a)))  # all off again: entry dropped
    assert settings.model_permissions == ()


def test_model_key_is_absolute_and_expands_home():
    assert model_key("~/models/x") == os.path.join(os.path.expanduser("~"), "models", "x")
    assert model_key("rel/x") == os.path.join(os.getcwd(), "rel", "x")


def test_round_trip_through_settings_json(tmp_path):
    path = tmp_path / "settings.json"
    settings = (Settings(GenerationSettings(max_new_tokens=99))
                .with_recent_model(tmp_path / "old").with_recent_model(tmp_path / "new")
                .with_permissions(ModelPermissions(str(tmp_path / "new"), trust_remote_code=True)))
    save_settings(settings, path)
    assert load_settings(path) == settings


def test_malformed_model_entries_are_skipped_not_fatal(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({
        "generation": {"max_new_tokens": 77},
        "recent_models": ["/m/one", 5, None, "/m/one", "/m/two"],
        "model_permissions": [{"path": "/m/one", "allow_pickle": "yes"},  # not a real boolean
                              {"path": "/m/two", "trust_remote_code": True}, "junk", {"no": "path"}],
    }))
    settings = load_settings(path)
    assert settings.generation.max_new_tokens == 77
    assert settings.recent_models == ("/m/one", "/m/two")
    assert settings.model_permissions == (ModelPermissions("/m/two", True, False),)


# ----- samplers (issue 17, item 3) ------------------------------------------------------------
SAMPLERS = dict(top_k=40, min_p=0.05, repetition_penalty=1.15, presence_penalty=0.5,
                frequency_penalty=-0.25, seed=1234)


def test_sampler_defaults_keep_todays_behaviour():
    g = GenerationSettings()
    assert (g.top_k, g.min_p, g.repetition_penalty, g.presence_penalty, g.frequency_penalty, g.seed) == \
        (0, 0.0, 1.0, 0.0, 0.0, None)
    assert g.validated() == g


def test_sampler_fields_round_trip_through_settings_json(tmp_path):
    path = tmp_path / "settings.json"
    settings = Settings(GenerationSettings(temperature=0.9, **SAMPLERS))
    save_settings(settings, path)
    assert json.loads(path.read_text())["generation"]["seed"] == 1234
    assert load_settings(path) == settings


def test_settings_file_written_before_samplers_reads_with_defaults(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"generation": {  # the release before issue 17 wrote exactly these
        "system_prompt": "Be brief.", "max_new_tokens": 300, "temperature": 0.4, "top_p": 0.8,
        "context_tokens": 2048}, "last_model_path": "", "recent_models": [], "model_permissions": []}))
    assert load_settings(path).generation == GenerationSettings("Be brief.", 300, 0.4, 0.8, 2048)


def test_a_max_new_tokens_of_zero_or_less_is_the_default_not_one_token():
    """A hand-edited settings.json's 0 or -3 gave one-token answers, said nowhere (new-user trial 14)."""
    for unset in (0, -3, "-1"):
        assert GenerationSettings(max_new_tokens=unset).validated().max_new_tokens == 512
    assert GenerationSettings(max_new_tokens=1).validated().max_new_tokens == 1
    assert GenerationSettings(max_new_tokens=10**9).validated().max_new_tokens == 32_768


def test_sampler_fields_are_clamped():
    g = GenerationSettings(top_k=-3, min_p=1.5, repetition_penalty=9.0, presence_penalty=-7,
                           frequency_penalty=3, seed=-5).validated()
    assert (g.top_k, g.min_p, g.repetition_penalty, g.presence_penalty, g.frequency_penalty, g.seed) == \
        (0, 1.0, 2.0, -2.0, 2.0, None)  # a negative seed is random (test_a_seed_of_minus_one_is_random)
    g = GenerationSettings(top_k=10**9, repetition_penalty=0.1, seed=2**80).validated()
    assert (g.top_k, g.repetition_penalty, g.seed) == (1_000_000, 0.5, 2**31 - 1)


def test_seed_that_is_not_an_integer_means_unseeded():
    for bad in (True, 1.5, "x", float("nan"), [3], {"a": 1}):
        assert GenerationSettings(seed=bad).validated().seed is None
    assert GenerationSettings(seed="42").validated().seed == 42
    assert GenerationSettings(seed=7.0).validated().seed == 7


def test_a_seed_of_minus_one_is_random(tmp_path):
    """New-user trial 10: settings.json's "seed": -1 (llama.cpp's, LM Studio's and Ollama's way to
    say random) became the fixed seed 0, in silence, and Settings showed "Seed 0". Any negative seed
    is random now, and stays random when the settings are saved again."""
    path = tmp_path / "settings.json"
    for negative in (-1, -1.0, "-1", -7, -(2**40)):
        path.write_text(json.dumps({"generation": {"temperature": 0.7, "seed": negative}}))
        assert load_settings(path).generation.seed is None, negative
    save_settings(load_settings(path), path)
    assert json.loads(path.read_text())["generation"]["seed"] is None
    assert GenerationSettings(seed=0).validated().seed == 0  # 0 is a seed like any other


def test_a_malformed_sampler_value_loses_only_itself(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{"generation": {"max_new_tokens": 77, "top_k": "many", "min_p": NaN, "temperature": NaN, '
                    '"top_p": Infinity, "repetition_penalty": 1.2, "seed": "soon", "future_knob": 3, '
                    '"system_prompt": 42}, '
                    '"recent_models": ["/m/one"]}')
    settings = load_settings(path)
    assert settings.generation == GenerationSettings(max_new_tokens=77, repetition_penalty=1.2)
    assert settings.recent_models == ("/m/one",)
    assert settings.generation.system_prompt == DEFAULT_SYSTEM_PROMPT  # trial 4: a 42 there hung every turn
    for bad in (42, None, ["a"]):
        with pytest.raises(TypeError, match="system_prompt"):
            GenerationSettings(system_prompt=bad).validated()


def test_a_fraction_or_a_boolean_where_a_whole_number_belongs_is_the_default_and_logged(tmp_path, caplog):
    """New-user trial: "context_tokens": 1.5 silently became a context of 1 token (every message
    refused), where other malformed values fall back to the default, logged (at INFO: the caller
    says them, app.core.settings.UnusableSettings)."""
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"generation": {
        "context_tokens": 1.5, "max_new_tokens": 2.5, "top_k": True, "seed": 7.5, "cpu_threads": 0.5,
        "kept_chat_cache_mib": 10.25, "summary_keep_turns": False, "temperature": 0.25}}))
    with caplog.at_level("INFO", logger="app.core.settings"):
        settings = load_settings(path)
    assert settings.generation == GenerationSettings(temperature=0.25)
    assert caplog.messages[:2] == ["settings: context_tokens=1.5 unusable (not a whole number: 1.5); using the default",
                                   "settings: max_new_tokens=2.5 unusable (not a whole number: 2.5); using the default"]
    assert len(caplog.messages) == 7
    # a whole number written as 4096.0 is that number
    path.write_text(json.dumps({"generation": {"context_tokens": 4096.0, "seed": 7.0}}))
    assert (load_settings(path).generation.context_tokens, load_settings(path).generation.seed) == (4096, 7)


def test_summary_policy_fields_are_clamped_and_default_to_todays_behaviour():
    assert (GenerationSettings().summary_fold_at, GenerationSettings().summary_keep_turns) == (1.0, 2)
    g = GenerationSettings(summary_fold_at=0.1, summary_keep_turns=0).validated()
    assert (g.summary_fold_at, g.summary_keep_turns) == (0.5, 1)
    g = GenerationSettings(summary_fold_at=3, summary_keep_turns=10**6).validated()
    assert (g.summary_fold_at, g.summary_keep_turns) == (1.0, 50)


def test_the_context_window_stops_where_the_settings_field_does():
    """New-user trial: an imported preset's context_tokens 10**12 was kept; the Settings field,
    which ends at MAX_CONTEXT_TOKENS, could not show it (tests/ui/test_settings_dialog.py)."""
    assert GenerationSettings(context_tokens=10**12).validated().context_tokens == MAX_CONTEXT_TOKENS
    assert GenerationSettings(context_tokens=-1).validated().context_tokens == 0  # auto


def test_cpu_threads_cannot_exceed_the_logical_cores(tmp_path, monkeypatch):
    """New-user trial: 1,024 threads on a 2-core machine, 1.5 tok/s and Stop taking a minute."""
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert GenerationSettings(cpu_threads=1024).validated().cpu_threads == 2
    assert GenerationSettings(cpu_threads=2).validated().cpu_threads == 2
    assert GenerationSettings().validated().cpu_threads == 0  # automatic stays the default
    assert GenerationSettings(cpu_threads=-3).validated().cpu_threads == 0
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"generation": {"cpu_threads": 1024, "max_new_tokens": 700}}), encoding="utf-8")
    loaded = load_settings(path).generation  # a hand-edited file cannot do it either
    assert (loaded.cpu_threads, loaded.max_new_tokens) == (2, 700)
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # unknown: one core is all that is certain
    assert GenerationSettings(cpu_threads=8).validated().cpu_threads == 1


def test_a_broken_settings_file_is_kept_aside_and_said_never_silently_replaced(tmp_path):
    """Trial 4: a truncated settings.json was replaced by the defaults at the next save, with only
    a log line; a folder in its place stopped the app."""
    from app.core.settings import read_settings

    path = tmp_path / "settings.json"
    assert read_settings(path) == (Settings(), None)  # none yet: the defaults, nothing to say
    broken = '{"generation": {"temperature": 0.3, "max_new_tokens": 77,'
    path.write_text(broken, encoding="utf-8")
    settings, note = read_settings(path)
    [kept] = tmp_path.glob("settings.unreadable-*.json")
    assert settings == Settings() and kept.read_text(encoding="utf-8") == broken and not path.exists()
    # the whole path, to find the file and mend it (new-user trial: only its name was said)
    assert str(note).startswith("Settings could not be read (") and note.kept_as == str(kept)
    assert f"kept as {kept}" in str(note) and note.json_position == (1, 58)
    save_settings(Settings(), path)  # the next save writes a new file beside the one kept
    assert kept.read_text(encoding="utf-8") == broken
    path.unlink()
    path.mkdir()
    settings, note = read_settings(path)
    assert settings == Settings() and path.is_dir() and "Is a directory" in note.reason and not note.kept_as
    assert load_settings(path) == Settings()


def test_a_broken_file_still_gives_its_language_and_appearance(tmp_path):
    """New-user trial: Korean chosen on an English system, then a stray comma in settings.json:
    the window that said the file was broken spoke English."""
    from app.core.settings import read_settings

    path = tmp_path / "settings.json"
    path.write_text('{"language": "ko", "appearance" : "dark", "generation": {"temperature": 0.3,}}',
                    encoding="utf-8")
    settings, note = read_settings(path)
    assert note.kept_as and settings == replace(Settings(), language="ko", appearance="dark")
    unknown = '{"language": "fr", "appearance": "light", "x": "language", "generation": {'
    path.write_text(unknown, encoding="utf-8")
    assert read_settings(path)[0] == replace(Settings(), appearance="light")  # "fr": the system's
    twice = '{"language": "ko", "generation": {"system_prompt": "x"}, "language": "en",'
    path.write_text(twice, encoding="utf-8")
    assert read_settings(path)[0] == Settings()  # named twice: no guess


def test_a_settings_file_nested_too_deeply_is_kept_aside_not_fatal(tmp_path):
    """New-user trial: {"generation": [[[…]]]} 100,000 deep raised RecursionError at every start."""
    from app.core.settings import read_settings

    path = tmp_path / "settings.json"
    deep = '{"generation": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path.write_text(deep, encoding="utf-8")
    settings, note = read_settings(path)
    [kept] = tmp_path.glob("settings.unreadable-*.json")
    assert settings == Settings() and not path.exists() and kept.read_text(encoding="utf-8") == deep
    assert str(note) == f"Settings could not be read (nested too deeply); the file was kept as {kept} " \
                   "and the defaults are used."


def test_a_settings_file_with_a_utf8_bom_is_read(tmp_path):
    """Notepad saves UTF-8 with a byte-order mark; such a settings.json was kept aside as unreadable."""
    from app.core.settings import read_settings

    path = tmp_path / "settings.json"
    path.write_bytes(b"\xef\xbb\xbf" + '{"generation": {"temperature": 0.3, "system_prompt": "안녕"}}'.encode())
    settings, note = read_settings(path)
    assert (settings.generation.temperature, settings.generation.system_prompt, note) == (0.3, "안녕", None)
    assert path.exists() and not list(tmp_path.glob("settings.unreadable-*.json"))


@pytest.mark.parametrize("value", [12, None, ["/models/a.gguf"], {"path": "x"}, True])
def test_a_last_model_path_that_is_no_text_is_no_path(tmp_path, value):
    """New-user re-trial: `"last_model_path": 12` in settings.json made the window say "The model used last
    is no longer at 12; opening the default model."."""
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"last_model_path": value}))
    assert load_settings(path).last_model_path == ""
    path.write_text(json.dumps({"last_model_path": "/models/a.gguf"}))
    assert load_settings(path).last_model_path == "/models/a.gguf"
