"""Where Headroom keeps its files, via platformdirs (XDG on Linux).

`HEADROOM_DATA_DIR` / `HEADROOM_CONFIG_DIR` / `HEADROOM_LOG_DIR` / `HEADROOM_CACHE_DIR` override the locations (tests,
portable installs).
"""

import os
import sys
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
    """The embedded default model's GGUF: the copy `python -m app.install_model` placed in the
    user data folder, else the one a desktop bundle carries (its first run needs no pip), else
    where install_model would place it (not there yet)."""
    installed = models_dir() / DEFAULT_MODEL_FILE
    bundled = bundled_model_path()
    return bundled if not installed.exists() and bundled is not None else installed


def bundled_model_path() -> Path | None:
    """The default model inside a PyInstaller bundle (``<bundle>/models/``), None elsewhere or
    when the bundle was built without it (packaging/headroom.spec)."""
    base = getattr(sys, "_MEIPASS", None) if getattr(sys, "frozen", False) else None
    path = Path(base) / "models" / DEFAULT_MODEL_FILE if base else None
    return path if path is not None and path.is_file() else None
