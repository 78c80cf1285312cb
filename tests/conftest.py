"""Shared fixtures. GUI tests run offscreen; settings and logs go to temporary folders;
the real model is the embedded default model installed by `python -m app.install_model`."""

import os
import tempfile

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HEADROOM_CONFIG_DIR", tempfile.mkdtemp(prefix="headroom-config-"))
os.environ.setdefault("HEADROOM_LOG_DIR", tempfile.mkdtemp(prefix="headroom-logs-"))
# Qt's own settings (QtProject.conf: the file dialog's history) into a scratch folder, not the
# user's ~/.config (new-user trial: the tests filled its history with /tmp/pytest-of-… paths)
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="headroom-xdg-config-")

from pathlib import Path

import pytest

import app  # noqa: F401  (offline mode and allocator settings, before torch loads)
from app.core.paths import default_model_path
from tests.helpers.file_size import file_size_limit  # noqa: F401  (a fixture for tests/core, tests/chat)
from tests.helpers.translations import english_plurals, korean  # noqa: F401  (fixtures for tests/ui, tests/chat)
from tests.helpers.unreadable import no_keyring  # noqa: F401  (a fixture for tests/core, tests/chat)


def _use_this_checkouts_resources() -> None:
    """app.resources is the top-level resources/ folder, mapped by the editable install, which may
    point at another checkout (a git worktree): load this checkout's, so the catalogues, fonts and
    stylesheet under test are the ones beside the code under test."""
    import importlib.util
    import sys

    folder = Path(__file__).resolve().parent.parent / "resources"
    spec = importlib.util.spec_from_file_location("app.resources", folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["app.resources"] = module
    spec.loader.exec_module(module)
    app.resources = module


_use_this_checkouts_resources()


@pytest.fixture(autouse=True)
def scratch_config(tmp_path_factory, monkeypatch) -> Path:
    """Each test gets a config folder of its own (HEADROOM_CONFIG_DIR: settings.json, presets.json,
    session.ini, api_keys.json), so settings one test saves (Settings → OK with max new tokens
    32,768) cannot reach a later test that reads the defaults. Not under tmp_path, which tests
    list. The session-wide folder set above stays for session fixtures."""
    folder = tmp_path_factory.mktemp("config")
    monkeypatch.setenv("HEADROOM_CONFIG_DIR", str(folder))
    return folder


@pytest.fixture(scope="session")
def real_model_path() -> Path:
    path = default_model_path()
    if not path.is_file():
        pytest.fail(f"the default model is not installed at {path}: run python -m app.install_model")
    return path


@pytest.fixture(scope="session")
def real_model_folder(real_model_path) -> Path:
    """The converted HF folder of the default model (converted once, then cached)."""
    from app.engine.loading.loader import resolve_model_folder

    return resolve_model_folder(real_model_path)


@pytest.fixture(scope="session")
def real_loaded(real_model_folder):
    from app.engine.loading.loader import load_model

    return load_model(real_model_folder)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, real_model_folder) -> Path:
    from tests.helpers.tiny_models import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"), real_model_folder)


@pytest.fixture(scope="session")
def tiny_loaded(tiny_model_dir):
    from app.engine.loading.loader import load_model

    return load_model(tiny_model_dir)


@pytest.fixture(scope="session")
def openai_server(real_model_folder, tmp_path_factory):
    """A real OpenAI-compatible peer for the remote backend: `transformers serve` on the default
    model's HF folder (CPU, offline, 127.0.0.1, a free port), ready when /health answers; stopped
    at the end of the session. See tests/helpers/openai_server.py."""
    from tests.helpers.openai_server import start_server

    server = start_server(real_model_folder, tmp_path_factory.mktemp("serve") / "serve.log")
    yield server
    server.stop()
