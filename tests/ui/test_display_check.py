"""Before the window: a session where it cannot open is said in one sentence with what to do,
never Qt's abort that blames libxcb-cursor0 (app.ui.display_check)."""

import ctypes.util
import subprocess
import sys
from pathlib import Path

import pytest

from app.ui import display_check
from app.ui.display_check import display_problem

ROOT = Path(__file__).resolve().parents[2]
NO_SERVER = ":4711"  # no X server listens there on a test machine


def test_a_live_wayland_display_another_platform_and_other_systems_are_left_to_qt(tmp_path):
    (tmp_path / "wayland-0").touch()  # the compositor's socket
    assert display_problem({"WAYLAND_DISPLAY": "wayland-0", "XDG_RUNTIME_DIR": str(tmp_path)}, "linux") is None
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None
    assert display_problem({"QT_QPA_PLATFORM": "vnc:size=800x600"}, "linux") is None
    assert display_problem({}, "win32") is None and display_problem({}, "darwin") is None
    assert "no display to show the window on" in display_problem({}, "linux")


def test_a_dead_wayland_display_or_a_platform_qt_lacks_is_said_not_aborted_on(tmp_path):
    """Re-trial: WAYLAND_DISPLAY=wayland-9 with no compositor, QT_QPA_PLATFORM=xcb without DISPLAY, and
    QT_QPA_PLATFORM=bogus each dumped core (Qt: "no Qt platform plugin could be initialized")."""
    dead = {"WAYLAND_DISPLAY": "wayland-9", "XDG_RUNTIME_DIR": str(tmp_path), "XDG_SESSION_TYPE": "wayland"}
    assert display_problem(dead, "linux") == (
        "there is no display to show the window on; WAYLAND_DISPLAY=wayland-9 names no live Wayland display. "
        "Start it from a desktop session, or use xvfb-run or QT_QPA_PLATFORM=offscreen; --ask answers on the "
        "command line.")
    assert display_problem({"QT_QPA_PLATFORM": "xcb"}, "linux").startswith(
        "there is no display to show the window on (DISPLAY and WAYLAND_DISPLAY are not set)")
    bogus = display_problem({"QT_QPA_PLATFORM": "bogus"}, "linux")
    assert bogus.startswith("QT_QPA_PLATFORM=bogus names no platform this Qt has (") and "offscreen" in bogus
    assert display_problem({**dead, "QT_QPA_PLATFORM": "wayland"}, "linux").startswith(
        "the window cannot open: QT_QPA_PLATFORM=wayland asks for Wayland, and no Wayland display answers at "
        "wayland-9")


def test_a_missing_x11_library_is_named_with_the_packages_to_install(monkeypatch, tmp_path):
    plugin = tmp_path / "libqxcb.so"
    plugin.write_bytes(b"")

    def dlopen(path):
        assert path == str(plugin)
        raise OSError(f"{plugin}: libxcb-icccm.so.4: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(display_check, "xcb_plugin_path", lambda: plugin)
    monkeypatch.setattr(display_check.ctypes, "CDLL", dlopen)
    said = display_problem({"DISPLAY": ":0"}, "linux")
    assert said.startswith("the window cannot open: Qt's X11 plugin needs libxcb-icccm.so.4, which is not installed")
    assert "sudo apt-get install libxcb1 libx11-6" in said and "--ask" in said


def test_other_load_errors_and_an_absent_plugin_are_not_refused(monkeypatch, tmp_path):
    plugin = tmp_path / "libqxcb.so"
    plugin.write_bytes(b"not an ELF file")
    assert display_check.missing_xcb_library(plugin) is None  # "invalid ELF header": left to Qt
    assert display_check.missing_xcb_library(tmp_path / "absent.so") is None


@pytest.mark.skipif(not sys.platform.startswith("linux") or not ctypes.util.find_library("xcb"),
                    reason="needs Linux with libxcb")
def test_an_x_display_that_does_not_answer_is_said(monkeypatch):
    monkeypatch.setattr(display_check, "missing_xcb_library", lambda: None)
    assert not display_check.x_server_reachable(NO_SERVER)
    said = display_problem({"DISPLAY": NO_SERVER}, "linux")
    assert said.startswith(f"the window cannot open: the X display {NO_SERVER} does not answer")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Qt's xcb plugin is Linux's")
def test_the_app_with_a_dead_display_exits_with_a_sentence_not_a_core_dump(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DISPLAY": NO_SERVER,
           "HEADROOM_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "app"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1, done.stderr  # Qt's abort was -6 (SIGABRT)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("headroom: the window cannot open: "), done.stderr
