"""The PyInstaller bundle builds, passes its own --self-test and opens its window (C27, C28).

Builds with packaging/build.sh (about 8 minutes on 2 cores), unless HEADROOM_BUNDLE names an
already built executable (e.g. dist/headroom/headroom) to test instead.
"""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from app.core.paths import models_dir

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.bundle, pytest.mark.real_model]
# Lines that mean the bundle misses a module, a data file or a Qt plugin.
BROKEN = ("Traceback", "ModuleNotFoundError", "No module named", "Could not load the Qt platform plugin",
          "Could not find the Qt platform plugin", "FileNotFoundError")
LOADED = re.compile(r"app\.engine\.loading\.loader\b.*: loaded ")  # the loader's INFO line (--verbose)


@pytest.fixture(scope="module")
def bundle(real_model_folder) -> Path:
    given = os.environ.get("HEADROOM_BUNDLE")
    if given:
        return Path(given).resolve()
    build = subprocess.run(["bash", str(ROOT / "packaging" / "build.sh"), "--no-test"], cwd=ROOT,
                           capture_output=True, text=True, timeout=2400)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return ROOT / "dist" / "headroom" / "headroom"


@pytest.fixture(scope="module")
def bundle_cache(tmp_path_factory) -> Path:
    """The bundle's cache for this module's runs: its default model (copied with a new mtime at
    each build) converts once here, not into the developer's own cache at every build."""
    return tmp_path_factory.mktemp("bundle-cache")


def isolated_env(tmp_path: Path, cache: Path) -> dict[str, str]:
    """Settings, conversations and logs in tmp_path, conversions in `cache`; the installed models
    seen through a link."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "models").symlink_to(models_dir())
    return {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HEADROOM_DATA_DIR": str(data),
            "HEADROOM_CONFIG_DIR": str(tmp_path / "config"), "HEADROOM_LOG_DIR": str(tmp_path / "log"),
            "HEADROOM_CACHE_DIR": str(cache)}


def test_frozen_self_test_passes(bundle, bundle_cache, tmp_path):
    result = subprocess.run([str(bundle), "--self-test"], capture_output=True, text=True, timeout=600,
                            env=isolated_env(tmp_path, bundle_cache))
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert " · frozen bundle · " in lines[0]
    assert any(line.startswith("PASS model answers: ") and "Paris" in line for line in lines)
    assert sum(line.startswith("PASS architecture ") for line in lines) >= 8
    assert any(line.startswith(("PASS 4-bit layer: ", "SKIP 4-bit layer: CUDA not available")) for line in lines)
    assert lines[-1].startswith("self-test OK: ")


def test_a_fresh_profile_answers_with_the_bundled_default_model(bundle, bundle_cache, tmp_path):
    """First run of the bundle on a machine where `python -m app.install_model` never ran (the
    bundle has no pip): the model it carries answers."""
    env = {**isolated_env(tmp_path, bundle_cache), "HEADROOM_DATA_DIR": str(tmp_path / "empty-data")}
    result = subprocess.run([str(bundle), "--self-test"], capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert any(line.startswith("PASS model answers: ") and "Paris" in line for line in result.stdout.splitlines())


def test_frozen_window_opens_offscreen_and_loads_the_model(bundle, bundle_cache, tmp_path):
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "w") as err:
        app = subprocess.Popen([str(bundle), "--verbose"], stdout=subprocess.DEVNULL, stderr=err,
                               env=isolated_env(tmp_path, bundle_cache))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and app.poll() is None:
            if LOADED.search(err_path.read_text(errors="replace")):
                break
            time.sleep(0.5)
        still_running = app.poll() is None
        app.send_signal(signal.SIGTERM)
        app.wait(timeout=30)
    stderr = err_path.read_text(errors="replace")
    assert still_running, f"the frozen GUI exited with {app.returncode}:\n{stderr[-3000:]}"
    assert LOADED.search(stderr), stderr[-3000:]
    assert not [word for word in BROKEN if word in stderr], stderr[-3000:]


def test_frozen_desktop_entry_runs_the_bundle(bundle, bundle_cache, tmp_path):
    env = {**isolated_env(tmp_path, bundle_cache), "XDG_DATA_HOME": str(tmp_path / "share")}
    result = subprocess.run([str(bundle), "--desktop-entry", "install"], capture_output=True, text=True,
                            timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    entry = (tmp_path / "share" / "applications" / "headroom.desktop").read_text()
    assert f"\nExec={bundle}\n" in entry  # the bundle path has no reserved characters
    assert (tmp_path / "share" / "icons" / "hicolor" / "256x256" / "apps" / "headroom.png").is_file()
