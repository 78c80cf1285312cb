"""Tab and Shift+Tab in the main window go the way a reader's eye does: the sidebar, the transcript
from top to bottom, the chat bar, Attach…, the message box, Send, the status bar.

Qt's own order is the order the widgets were made in. The attach button is made after Send, and a
chat's bubbles are made as it grows, so Tab went from the message box to Send, Attach…, the status
bar, then up into the transcript's buttons and on to the sidebar (trial 6). The order is worked
out when Tab is pressed, from where the widgets are, so bubbles built later take their places.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtWidgets import QWidget


def reading_order(window: QWidget, regions: Sequence[QWidget]) -> list[QWidget]:
    """The widgets of `window` that Tab stops at (visible, enabled, taking focus by Tab, in this
    window, not a dialog or a floating dock), in reading order: by the first of `regions` that holds
    them (a widget in none comes after all; a region that takes focus itself comes first in it), then
    line by line from the top and left to right in a line (a widget whose middle is beside a line's
    first widget shares its line: Attach…, the taller message box and Send).
    Positions are read within the region, so a transcript scrolled far down still sorts as one block."""
    placed: dict[int, list[tuple[QRect, QWidget]]] = {}
    for widget in window.findChildren(QWidget):
        if not (widget.window() is window and widget.isVisible() and widget.isEnabled()
                and widget.focusPolicy() & Qt.FocusPolicy.TabFocus == Qt.FocusPolicy.TabFocus
                and widget.focusProxy() is None):
            continue
        index, region = next(((i, r) for i, r in enumerate(regions) if r is widget or r.isAncestorOf(widget)),
                             (len(regions), window))
        placed.setdefault(index, []).append((QRect(widget.mapTo(region, QPoint(0, 0)), widget.size()), widget))
    order = []
    for index in sorted(placed):
        region = regions[index] if index < len(regions) else None
        order += [widget for _, widget in placed[index] if widget is region]  # the region itself first
        lines: list[list[tuple[QRect, QWidget]]] = []
        for rect, widget in sorted(placed[index], key=lambda item: item[0].top()):
            if widget is region:
                continue
            if lines and rect.center().y() <= lines[-1][0][0].bottom():  # beside the line's first widget
                lines[-1].append((rect, widget))
            else:
                lines.append([(rect, widget)])
        order += [widget for line in lines for _, widget in sorted(line, key=lambda item: item[0].left())]
    return order


def step(window: QWidget, regions: Sequence[QWidget], current: QWidget | None, forward: bool) -> QWidget | None:
    """The widget Tab (`forward`) or Shift+Tab moves to from `current`, in `reading_order`,
    wrapping at the ends; None when `current` is no stop of it (Qt's own order decides then)."""
    order = reading_order(window, regions)
    if current is None or current not in order:
        return None
    return order[(order.index(current) + (1 if forward else -1)) % len(order)]
