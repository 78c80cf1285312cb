"""Put Headroom in the desktop's application menu: `python -m app.desktop_entry install|uninstall`
from a source install, `headroom --desktop-entry install|uninstall` from the bundle.

Installs, for the current user only, `headroom.desktop` into `$XDG_DATA_HOME/applications` and
the icon into `$XDG_DATA_HOME/icons/hicolor/<size>x<size>/apps` (PNG) and `.../scalable/apps`
(SVG), following the freedesktop Desktop Entry and Icon Theme specifications
(https://specifications.freedesktop.org/desktop-entry-spec/latest/,
https://specifications.freedesktop.org/icon-theme-spec/latest/). `$XDG_DATA_HOME` defaults to
~/.local/share (platformdirs). Exec runs this interpreter's `-P -m app` from a source install, or
the bundle's executable when frozen (PyInstaller sets sys.frozen). No Qt is imported.
"""

import argparse
import sys
from importlib import resources
from pathlib import Path

import platformdirs

APP_ID = "headroom"  # desktop file id and icon name; app/ui/application.py sets the same one
ICON_SIZES = (16, 32, 48, 64, 128, 256)  # pixels; the PNGs committed under resources/icons
# Characters that force an Exec argument into double quotes (Desktop Entry spec, "The Exec key").
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


def launch_command() -> list[str]:
    """argv that starts the GUI: the bundle's executable when frozen, else `<python> -P -m app`
    (the interpreter must have Headroom installed, e.g. `pip install -e .`, as the README does).
    -P keeps the working folder off sys.path: launchers start in $HOME, and a ~/app package of the
    user's own would otherwise be what the menu runs (new-user trial)."""
    if getattr(sys, "frozen", False):
        return [str(Path(sys.executable).resolve())]
    return [str(Path(sys.executable).absolute()), "-P", "-m", "app"]


def quote_exec(argv: list[str]) -> str:
    """The Exec value for `argv`: reserved characters put an argument in double quotes with
    `"`, `` ` ``, `$` and `\\` backslash-escaped, `%` doubled (field codes), then backslashes
    doubled once more for the desktop file's string escaping. Raises ValueError on a newline."""
    parts = []
    for arg in argv:
        if "\n" in arg or "\r" in arg:
            raise ValueError(f"a newline cannot appear in a desktop entry's Exec: {arg!r}")
        arg = arg.replace("%", "%%")
        if _RESERVED & set(arg):
            arg = '"' + "".join("\\" + c if c in '"`$\\' else c for c in arg) + '"'
        parts.append(arg)
    return " ".join(parts).replace("\\", "\\\\")


def render_entry(argv: list[str] | None = None) -> str:
    """The desktop entry text: resources/headroom.desktop with Exec and TryExec filled in."""
    argv = argv or launch_command()
    template = resources.files("app.resources").joinpath(f"{APP_ID}.desktop").read_text(encoding="utf-8")
    try_exec = argv[0].replace("\\", "\\\\")  # a plain string value: only backslashes escape
    return template.replace("@EXEC@", quote_exec(argv)).replace("@TRYEXEC@", try_exec)


def data_home() -> Path:
    """$XDG_DATA_HOME, or ~/.local/share when unset (read at call time)."""
    return Path(platformdirs.user_data_dir())


def installed_paths(home: Path | None = None) -> list[Path]:
    """Every file `install` writes under `home` (default: data_home()), desktop file first."""
    home = home or data_home()
    icons = home / "icons" / "hicolor"
    return [home / "applications" / f"{APP_ID}.desktop",
            *(icons / f"{s}x{s}" / "apps" / f"{APP_ID}.png" for s in ICON_SIZES),
            icons / "scalable" / "apps" / f"{APP_ID}.svg"]


def _icon_sources() -> list[bytes]:
    icons = resources.files("app.resources").joinpath("icons")
    pngs = [icons.joinpath(f"{APP_ID}-{s}.png").read_bytes() for s in ICON_SIZES]
    return [*pngs, icons.joinpath(f"{APP_ID}.svg").read_bytes()]


def install(home: Path | None = None, argv: list[str] | None = None) -> list[Path]:
    """Write the desktop entry and icons under `home` (default: data_home()); return the paths.
    Overwrites an earlier install. Raises OSError when a folder cannot be written."""
    home = home or data_home()
    desktop, *icon_paths = installed_paths(home)
    for path, content in zip(icon_paths, _icon_sources(), strict=True):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    (home / "icons" / "hicolor").touch()  # a newer theme folder tells desktops to rescan
    desktop.parent.mkdir(parents=True, exist_ok=True)
    desktop.write_text(render_entry(argv), encoding="utf-8")
    return [desktop, *icon_paths]


def uninstall(home: Path | None = None) -> list[Path]:
    """Remove what `install` wrote under `home`; return the files that were there.
    Folders are left (other applications share them). Raises OSError on a permission error."""
    removed = []
    for path in installed_paths(home):
        if path.exists():
            path.unlink()
            removed.append(path)
    return removed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.desktop_entry", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("install", "uninstall", "show"),
                        help="install or remove the menu entry and icons; show prints the entry")
    args = parser.parse_args(argv)
    if not sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        print(f"desktop entries are a freedesktop (Linux/BSD) feature, not for {sys.platform}", file=sys.stderr)
        return 1
    try:
        if args.action == "show":
            print(render_entry(), end="")
        elif args.action == "install":
            desktop, *icons = install()
            print(f"installed {desktop} and {len(icons)} icons; Exec={quote_exec(launch_command())}")
        else:
            removed = uninstall()
            print(f"removed {len(removed)} files" if removed else "nothing was installed")
    except (OSError, ValueError) as exc:
        print(f"desktop entry: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
