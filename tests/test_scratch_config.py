"""Tests cannot leak settings to each other: every test starts from its own empty config folder
(tests/conftest.py scratch_config), whatever an earlier test saved."""

from dataclasses import replace

import pytest

from app.core.paths import config_dir
from app.core.settings import GenerationSettings, Settings, load_settings, save_settings


@pytest.mark.parametrize("run", ["first", "second"])
def test_settings_saved_in_one_test_are_not_read_in_the_next(run, scratch_config):
    """Run twice: the second run would read the first one's 32,768 if the folder were shared."""
    assert config_dir() == scratch_config and list(scratch_config.iterdir()) == []
    assert load_settings().generation.max_new_tokens == GenerationSettings().max_new_tokens
    save_settings(replace(Settings(), generation=replace(GenerationSettings(), max_new_tokens=32768)))
    assert load_settings().generation.max_new_tokens == 32768
