"""A row of controls that wraps onto more lines when it is too narrow for one (a flow layout).

The chat bar's preset and KV cache pickers stay at the left and its Notes and Summarize now at the
right while the row is wide enough; a narrower row (a 640 px window, trial 9) puts what does not
fit on the next line instead of cutting every control ("No···20", "Su···ow", "Balancec"). Each
item keeps its size hint, so every text stays whole; the layout's minimum width is its widest
item's, so a splitter or a window never squeezes the row below what one item needs.

After Qt's "Flow Layout" example (https://doc.qt.io/qt-6/qtwidgets-layouts-flowlayout-example.html):
the height follows the width (heightForWidth).
"""

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QWidget


class WrapRow(QLayout):
    """Items laid out left to right, wrapping to a new line where the next one does not fit.

    `add_widget(widget, right=False)`: items added with right=True are packed against the right
    edge of their line (after the left ones, with the free space between); the others against
    the left. Lines are filled in the order the items were added. `spacing` px between items on
    a line, `line_spacing` px between lines.
    """

    def __init__(self, parent: QWidget | None = None, spacing: int = 6, line_spacing: int = 4):
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._right: list[bool] = []
        self._pending_right = False
        self._spacing = spacing
        self._line_spacing = line_spacing

    # ----- building ------------------------------------------------------------------------
    def add_widget(self, widget: QWidget, right: bool = False) -> None:
        self._pending_right = right
        self.addWidget(widget)  # calls addItem
        self._pending_right = False

    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 (Qt override)
        self._items.append(item)
        self._right.append(self._pending_right)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 (Qt override)
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 (Qt override)
        if not 0 <= index < len(self._items):
            return None
        self._right.pop(index)
        return self._items.pop(index)

    # ----- sizes ---------------------------------------------------------------------------
    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802 (Qt override)
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt override)
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt override)
        margins = self.contentsMargins()
        lines = self.lines(width - margins.left() - margins.right())
        return self._lines_height(lines) + margins.top() + margins.bottom()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        """Everything on one line."""
        shown = self._shown()
        margins = self.contentsMargins()
        width = sum(item.sizeHint().width() for item, _ in shown) + self._spacing * max(len(shown) - 1, 0)
        height = max((item.sizeHint().height() for item, _ in shown), default=0)
        return QSize(width + margins.left() + margins.right(), height + margins.top() + margins.bottom())

    def minimumSize(self) -> QSize:  # noqa: N802 (Qt override)
        """As wide as the widest item (each on a line of its own)."""
        shown = self._shown()
        margins = self.contentsMargins()
        width = max((item.minimumSize().width() for item, _ in shown), default=0)
        height = max((item.sizeHint().height() for item, _ in shown), default=0)
        return QSize(width + margins.left() + margins.right(), height + margins.top() + margins.bottom())

    def lines(self, width: int) -> list[list[tuple[QLayoutItem, bool]]]:
        """The shown items as they fill lines `width` px wide: [(item, right), …] per line."""
        lines: list[list[tuple[QLayoutItem, bool]]] = []
        used = 0
        for item, right in self._shown():
            needed = item.sizeHint().width()
            if lines and used + self._spacing + needed <= width:
                lines[-1].append((item, right))
                used += self._spacing + needed
            else:
                lines.append([(item, right)])
                used = needed
        return lines

    def _shown(self) -> list[tuple[QLayoutItem, bool]]:
        return [(item, right) for item, right in zip(self._items, self._right, strict=True) if not item.isEmpty()]

    def _lines_height(self, lines) -> int:
        heights = [max(item.sizeHint().height() for item, _ in line) for line in lines]
        return sum(heights) + self._line_spacing * max(len(heights) - 1, 0)

    # ----- placing -------------------------------------------------------------------------
    def setGeometry(self, rect: QRect) -> None:  # noqa: N802 (Qt override)
        super().setGeometry(rect)
        area = rect.marginsRemoved(self.contentsMargins())
        y = area.top()
        for line in self.lines(area.width()):
            height = max(item.sizeHint().height() for item, _ in line)
            left = area.left()
            for item, _ in (entry for entry in line if not entry[1]):
                left = self._place(item, left, y, height, area.width()) + self._spacing
            right = area.right() + 1
            for item, _ in reversed([entry for entry in line if entry[1]]):
                width = min(item.sizeHint().width(), area.width())
                self._place(item, right - width, y, height, area.width())
                right -= width + self._spacing
            y += height + self._line_spacing

    @staticmethod
    def _place(item: QLayoutItem, x: int, y: int, line_height: int, room: int) -> int:
        """Put `item` at `x`, centred in its line; returns its right edge + 1."""
        hint = item.sizeHint()
        width = max(min(hint.width(), room), item.minimumSize().width())
        item.setGeometry(QRect(QPoint(x, y + (line_height - hint.height()) // 2), QSize(width, hint.height())))
        return x + width
