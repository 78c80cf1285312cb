"""`python -m app.desktop_entry install|uninstall` into a temporary XDG_DATA_HOME."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app import desktop_entry

SIZES = desktop_entry.ICON_SIZES


@pytest.fixture
def data_home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    return tmp_path / "share"


def entry_lines(data_home: Path) -> dict[str, str]:
    text = (data_home / "applications" / "headroom.desktop").read_text(encoding="utf-8")
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def test_install_from_source_runs_this_interpreter_with_dash_m_app(data_home, capsys):
    assert desktop_entry.main(["install"]) == 0
    python = str(Path(sys.executable).absolute())
    entry = entry_lines(data_home)
    assert entry["Exec"] == f"{python} -P -m app"  # the venv path has no reserved characters
    assert entry["TryExec"] == python
    assert entry["Icon"] == "headroom" and entry["Name"] == "Headroom" and entry["Type"] == "Application"
    for size in SIZES:
        png = data_home / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "headroom.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert int.from_bytes(png.read_bytes()[16:20], "big") == size  # IHDR width
    svg = data_home / "icons" / "hicolor" / "scalable" / "apps" / "headroom.svg"
    assert b"<svg" in svg.read_bytes()
    assert f"Exec={python} -P -m app" in capsys.readouterr().out


def test_the_menu_entry_runs_headroom_even_from_a_folder_holding_another_app_package(data_home, tmp_path):
    """New-user trial: with ~/app/__main__.py (a project of the user's own) and the launcher starting in
    $HOME, `python -m app` ran that package instead of Headroom."""
    import subprocess

    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__main__.py").write_text("print('SOME OTHER app PACKAGE')")
    argv = [*desktop_entry.launch_command(), "--help"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "usage: headroom" in done.stdout and "OTHER" not in done.stdout


def test_frozen_exec_is_the_bundle_executable_quoted(data_home, monkeypatch, tmp_path):
    bundle = tmp_path / "Head Room $1" / "headroom"
    bundle.parent.mkdir()
    bundle.touch()
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(bundle))
    desktop_entry.install()
    entry = entry_lines(data_home)
    # Exec quoting escapes $ inside double quotes; the string escaping then doubles the backslash.
    assert entry["Exec"] == '"' + str(bundle).replace("$", "\\\\$") + '"'
    assert entry["TryExec"] == str(bundle)


def test_quote_exec_follows_the_desktop_entry_spec():
    assert desktop_entry.quote_exec(["/usr/bin/python3", "-m", "app"]) == "/usr/bin/python3 -m app"
    assert desktop_entry.quote_exec(["/opt/my apps/headroom"]) == '"/opt/my apps/headroom"'
    assert desktop_entry.quote_exec(["/opt/100%/h"]) == "/opt/100%%/h"
    assert desktop_entry.quote_exec(['/a"b']) == '"/a\\\\"b"'
    with pytest.raises(ValueError):
        desktop_entry.quote_exec(["/a\nb"])


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None, reason="desktop-file-utils not installed")
def test_the_installed_entry_validates(data_home):
    desktop, *_ = desktop_entry.install()
    result = subprocess.run(["desktop-file-validate", str(desktop)], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout == "", result.stdout + result.stderr


def test_uninstall_removes_exactly_what_install_wrote(data_home):
    written = desktop_entry.install()
    (data_home / "applications" / "other.desktop").write_text("[Desktop Entry]\n")
    assert sorted(desktop_entry.uninstall()) == sorted(written)
    assert not any(path.exists() for path in written)
    assert (data_home / "applications" / "other.desktop").exists()
    assert desktop_entry.uninstall() == []


def test_command_line_runs_without_qt(data_home):
    code = ("import sys, runpy; sys.argv = ['x', 'install']\n"
            "try:\n    runpy.run_module('app.desktop_entry', run_name='__main__')\n"
            "except SystemExit as e:\n    assert e.code == 0, e.code\n"
            "assert not any(m.startswith('PySide6') for m in sys.modules), 'Qt imported'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**__import__("os").environ, "XDG_DATA_HOME": str(data_home)})
    assert result.returncode == 0, result.stderr
    assert (data_home / "applications" / "headroom.desktop").is_file()
