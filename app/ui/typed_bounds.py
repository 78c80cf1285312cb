"""What a spin box does with a typed number outside its range, for whole numbers and decimals alike.

Qt's QSpinBox and QDoubleSpinBox refuse a key that leaves a number no typing could bring into the
range, so the field silently ends up holding another number (new-user trials): "-5" left 5 where
the minimum is 0, "-2" left the maximum repetition penalty 2.00, and "999999999" left 9999 in a
field that stops at 32,768. Here the keys stay on screen, and Enter or leaving the field settles
them, visibly: a minus sign where the field takes no such number puts back the value from before
(becoming the minimum, 1 token, would have cut every answer to one token); a number above the
maximum becomes the maximum, as a browser's number field or LM Studio's settings do.
"""

import re

from PySide6.QtGui import QValidator


class TypedBounds:
    """Mixin before QSpinBox or QDoubleSpinBox in the bases (``class X(TypedBounds, QSpinBox)``);
    it overrides `validate` and `fixup` and adds no signals. Not a widget itself."""

    def _number(self, text: str) -> str:
        """`text` without the prefix, the suffix and surrounding spaces."""
        if self.prefix() and text.startswith(self.prefix()):
            text = text[len(self.prefix()):]
        if self.suffix() and text.endswith(self.suffix()):
            text = text[:-len(self.suffix())]
        return text.strip()

    def _typed(self, text: str) -> tuple[bool, float | None] | None:
        """(minus sign, the number or None for a bare sign or point) when `text` is a plain number
        in the field's locale, else None (the special value's text, letters: left to Qt)."""
        locale = self.locale()
        number = self._number(text).replace(locale.groupSeparator(), "")
        point = locale.decimalPoint() if hasattr(self, "decimals") else ""
        pattern = r"-?\d*" + (rf"(?:{re.escape(point)}\d*)?" if point else "")
        if not number or not re.fullmatch(pattern, number):
            return None
        try:
            value = float(number.replace(point, ".") if point else number)  # inf for a thousand digits
        except ValueError:  # "-", ".", "-."
            value = None
        return number.startswith("-"), value

    def _below(self, typed: tuple[bool, float | None]) -> bool:
        """A minus sign the range has no room for: any where the minimum is 0 or more ("-0." too),
        else a number below the minimum (a seed's -5 where -1 means random)."""
        negative, value = typed
        return negative and (self.minimum() >= 0 or (value is not None and value < self.minimum()))

    def _above(self, typed: tuple[bool, float | None]) -> bool:
        """A number above the maximum (any number of digits)."""
        return typed[1] is not None and typed[1] > self.maximum()

    def validate(self, text: str, pos: int):  # noqa: D102 (Qt override)
        typed = self._typed(text)
        if typed is not None and (self._below(typed) or self._above(typed)):
            return QValidator.State.Intermediate, text, pos  # kept on screen until Enter or focus out
        return super().validate(text, pos)

    def fixup(self, text: str) -> str:  # noqa: D102 (Qt override)
        typed = self._typed(text)
        if typed is not None and self._below(typed):  # the value typed over is still the value
            if self.value() == self.minimum() and self.specialValueText():
                return self.specialValueText()
            return self.prefix() + self.textFromValue(self.value()) + self.suffix()
        if typed is not None and self._above(typed):
            return self.prefix() + self.textFromValue(self.maximum()) + self.suffix()
        return super().fixup(text)
