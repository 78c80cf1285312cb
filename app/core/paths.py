"""Where Headroom keeps its files, via platformdirs (XDG on Linux).

`HEADROOM_DATA_DIR` / `HEADROOM_CONFIG_DIR` / `HEADROOM_LOG_DIR` / `HEADROOM_CACHE_DIR` override the locations (tests,
portable installs).
"""

import os
from pathlib import Path

import platformdirs

APP_NAME = "headroom"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def data_dir() -> Path:
    """User data folder: models, converted caches, conversations (e.g. ~/.local/share/headroom)."""
    override = os.environ.get("HEADROOM_DATA_DIR")
    return Path(override) if override else Path(platformdirs.user_data_dir(APP_NAME))


def config_dir() -> Path:
    """User config folder: settings.json (e.g. ~/.config/headroom)."""
    override = os.environ.get("HEADROOM_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir(APP_NAME))


def log_dir() -> Path:
    """User log folder: rotating headroom.log files (e.g. ~/.local/state/headroom/log)."""
    override = os.environ.get("HEADROOM_LOG_DIR")
    return Path(override) if override else Path(platformdirs.user_log_dir(APP_NAME))


def cache_dir() -> Path:
    """User cache folder: converted GGUF models, safe to delete (e.g. ~/.cache/headroom)."""
    override = os.environ.get("HEADROOM_CACHE_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir(APP_NAME))


def models_dir() -> Path:
    return data_dir() / "models"


def default_model_path() -> Path:
    """The embedded default model's GGUF, placed by `python -m app.install_model`."""
    return models_dir() / DEFAULT_MODEL_FILE
