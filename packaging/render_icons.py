"""Render resources/icons/headroom.svg to the PNG sizes desktops ask for (build-time only).

    QT_QPA_PLATFORM=offscreen .venv/bin/python packaging/render_icons.py

The PNGs are committed, so neither the app nor the installer renders SVG at run time.
Uses QtSvg from PySide6-Essentials (already a dependency).
"""

import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ICONS = Path(__file__).resolve().parents[1] / "resources" / "icons"
SIZES = (16, 32, 48, 64, 128, 256)  # hicolor theme sizes (freedesktop icon theme spec)


def render(svg: Path, size: int, target: Path) -> None:
    """Draw `svg` antialiased on a transparent size×size (pixels) image; raises OSError if unsaved."""
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise ValueError(f"{svg} is not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    if not image.save(str(target), "PNG"):
        raise OSError(f"cannot write {target}")


def main() -> int:
    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    for size in SIZES:
        target = ICONS / f"headroom-{size}.png"
        render(ICONS / "headroom.svg", size, target)
        print(f"{target.name}: {target.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
