"""Can the window open on this Linux session? Asked before QApplication exists, because when it
cannot, Qt aborts the process (a core dump) with a message that misleads: it blames
libxcb-cursor0 whatever library is missing, then says "Reinstalling the application may fix
this problem".

The cases, each said in one sentence with what to do:
- QT_QPA_PLATFORM naming no platform plugin this Qt has ("bogus");
- no display at all (an ssh session, a server): no DISPLAY, and no Wayland socket where
  WAYLAND_DISPLAY points (a variable left from another session counts as none);
- Qt's X11 plugin (platforms/libqxcb.so) cannot load because a system library is missing: the
  plugin is opened here with dlopen and the loader's own error names the library (Qt's list of
  what X11 needs: https://doc.qt.io/qt-6/linux-requirements.html);
- the X server cannot be reached (a stale DISPLAY after ssh -X, no xauth): xcb_connect fails.

A live Wayland socket, and a QT_QPA_PLATFORM other than xcb or wayland (offscreen, vnc, eglfs…),
are left to Qt.
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
    (or when it is not ours to judge: not Linux, a live Wayland socket, another platform chosen)."""
    if not platform.startswith("linux"):
        return None
    chosen = [name.split(":")[0].strip() for name in environ.get("QT_QPA_PLATFORM", "").split(";") if name.strip()]
    if chosen:  # Qt tries them in order ("wayland;xcb"); "name:options" carries options
        platforms = xcb_plugin_path().parent
        if not platforms.is_dir():
            return None  # no plugin folder where QLibraryInfo says (an odd bundle): nothing to judge by
        known = [name for name in chosen if _plugin_file(platforms, name).is_file()]
        if not known:
            have = sorted(file.name.removeprefix("libq").removesuffix(".so") for file in platforms.glob("libq*.so"))
            return (f"QT_QPA_PLATFORM={environ['QT_QPA_PLATFORM']} names no platform this Qt has "
                    f"({', '.join(have) or 'none found'}); unset it, or choose one of them.")
        if any(name != "xcb" and not name.startswith("wayland") for name in known):
            return None  # offscreen, vnc, eglfs…: no display needed
        if not any(name.startswith("wayland") for name in known):
            return _x11_problem(environ, wayland_tried=False)
    if wayland_socket(environ) is not None:
        return None
    if chosen and "xcb" not in chosen:
        return (f"the window cannot open: QT_QPA_PLATFORM={environ['QT_QPA_PLATFORM']} asks for Wayland, and "
                f"no Wayland display answers at {environ.get('WAYLAND_DISPLAY') or 'wayland-0'}. Start it from a "
                "desktop session; --ask answers on the command line.")
    return _x11_problem(environ, wayland_tried=bool(environ.get("WAYLAND_DISPLAY")))


def wayland_socket(environ) -> Path | None:
    """The Wayland compositor's socket WAYLAND_DISPLAY names (relative to XDG_RUNTIME_DIR), when it
    exists; None without one."""
    name = environ.get("WAYLAND_DISPLAY")
    if not name:
        return None
    socket = Path(name) if os.path.isabs(name) else Path(environ.get("XDG_RUNTIME_DIR", "/nonexistent")) / name
    return socket if socket.exists() else None


def _plugin_file(platforms: Path, name: str) -> Path:
    """The plugin file of a Qt platform name: wayland-egl and wayland-brcm live in libqwayland.so."""
    return platforms / ("libqwayland.so" if name.startswith("wayland") else f"libq{name}.so")


def _x11_problem(environ, wayland_tried: bool) -> str | None:
    """Why Qt's X11 platform cannot open, or None."""
    display = environ.get("DISPLAY")
    if not display:
        dead = (f"; WAYLAND_DISPLAY={environ['WAYLAND_DISPLAY']} names no live Wayland display" if wayland_tried
                else " (DISPLAY and WAYLAND_DISPLAY are not set)")
        return (f"there is no display to show the window on{dead}. Start it from a desktop session, or use "
                "xvfb-run or QT_QPA_PLATFORM=offscreen; --ask answers on the command line.")
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
