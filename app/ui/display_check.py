"""Can the window open on this Linux session? Asked before QApplication exists, because when it
cannot, Qt aborts the process (a core dump) with a message that misleads: it blames
libxcb-cursor0 whatever library is missing, then says "Reinstalling the application may fix
this problem".

Three cases, each said in one sentence with what to do:
- no display at all (an ssh session, a server): DISPLAY and WAYLAND_DISPLAY unset;
- Qt's X11 plugin (platforms/libqxcb.so) cannot load because a system library is missing: the
  plugin is opened here with dlopen and the loader's own error names the library (Qt's list of
  what X11 needs: https://doc.qt.io/qt-6/linux-requirements.html);
- the X server cannot be reached (a stale DISPLAY after ssh -X, no xauth): xcb_connect fails.

Only X11 sessions are checked; Wayland and an explicit QT_QPA_PLATFORM are left to Qt.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

# Debian 12 / Ubuntu 22.04 packages of what the xcb plugin of PySide6 6.11 loads (ldd), as the README lists them.
XCB_PACKAGES = ("libxcb1 libx11-6 libx11-xcb1 libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 "
                "libxcb-randr0 libxcb-render0 libxcb-render-util0 libxcb-shape0 libxcb-shm0 libxcb-sync1 "
                "libxcb-util1 libxcb-xfixes0 libxcb-xkb1 libxkbcommon0 libxkbcommon-x11-0 libegl1 libgl1 "
                "libfontconfig1 libfreetype6 libglib2.0-0 libdbus-1-3")
MISSING_LIBRARY = "cannot open shared object file"  # glibc's dlerror for an absent dependency


def display_problem(environ=os.environ, platform: str = sys.platform) -> str | None:
    """Why the window cannot open, as a sentence for stderr and the log, or None when it can
    (or when it is not ours to judge: not Linux, Wayland, QT_QPA_PLATFORM set)."""
    if not platform.startswith("linux") or environ.get("QT_QPA_PLATFORM") or environ.get("WAYLAND_DISPLAY"):
        return None
    display = environ.get("DISPLAY")
    if not display:
        return ("there is no display to show the window on (DISPLAY and WAYLAND_DISPLAY are not set). Start it "
                "from a desktop session, or use xvfb-run or QT_QPA_PLATFORM=offscreen; --ask answers on the "
                "command line.")
    missing = missing_xcb_library()
    if missing:
        return (f"the window cannot open: Qt's X11 plugin needs {missing}, which is not installed. On Debian or "
                f"Ubuntu, Qt's X11 libraries are: sudo apt-get install {XCB_PACKAGES}. --ask answers on the "
                "command line meanwhile.")
    if not x_server_reachable(display):
        return (f"the window cannot open: the X display {display} does not answer (a DISPLAY left from an "
                "ended session, or an ssh connection without X forwarding). Start it from a desktop session, "
                "or use xvfb-run; --ask answers on the command line.")
    return None


def xcb_plugin_path() -> Path:
    """Qt's X11 platform plugin as this PySide6 (or the bundle) ships it."""
    from PySide6.QtCore import QLibraryInfo  # QtCore only: no QApplication, no platform plugin yet

    return Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath)) / "platforms" / "libqxcb.so"


def missing_xcb_library(plugin: Path | None = None) -> str | None:
    """The first system library the X11 plugin cannot find ("libxcb-icccm.so.4"), or None when it
    loads, is absent, or fails for another reason (left to Qt, never a false refusal)."""
    plugin = plugin or xcb_plugin_path()
    if not plugin.is_file():
        return None
    try:
        ctypes.CDLL(str(plugin))  # the handle stays: Qt's own dlopen of the plugin reuses it
    except OSError as exc:
        message = str(exc)
        if MISSING_LIBRARY in message:
            return message.split(MISSING_LIBRARY)[0].rsplit(": ", 2)[-2].strip()
    return None


def x_server_reachable(display: str) -> bool:
    """Whether libxcb connects to the X display ":0", "host:10.0" (and is authorised). True when
    libxcb itself cannot be loaded: then the plugin check has already spoken."""
    try:
        xcb = ctypes.CDLL("libxcb.so.1")
    except OSError:
        return True
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    connection = xcb.xcb_connect(display.encode(), None)  # never NULL: a failed connection is an error object
    failed = xcb.xcb_connection_has_error(connection)
    xcb.xcb_disconnect(connection)
    return failed == 0
