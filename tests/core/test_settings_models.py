"""Recent models and per-model permissions in settings.json."""

import json
import os

from app.core.settings import (
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
