"""A spin box for counts that never turns a typed "-5" into 5."""

from PySide6.QtGui import QValidator
from PySide6.QtWidgets import QSpinBox


class CountSpinBox(QSpinBox):
    """QSpinBox for a count whose minimum is 0 or more (tokens, threads, MiB, turns).

    Qt's own QSpinBox refuses the '-' key when the minimum is not negative, so typing "-5" leaves
    "5" in the field, a value the user never asked for (new-user trial: Max new tokens -5 became
    5). Here the minus sign stays on screen while typing, and Enter or leaving the field puts the
    value back to what it was before, visibly, as an invalid entry is undone elsewhere (regression
    trial: turning it into the minimum, 1 token, would have cut every answer to one token). No
    signals beyond QSpinBox's."""

    def _number(self, text: str) -> str:
        """`text` without the prefix, the suffix and surrounding spaces."""
        if self.prefix() and text.startswith(self.prefix()):
            text = text[len(self.prefix()):]
        if self.suffix() and text.endswith(self.suffix()):
            text = text[:-len(self.suffix())]
        return text.strip()

    def _negative(self, text: str) -> bool:
        number = self._number(text).replace(self.locale().groupSeparator(), "")
        return number.startswith("-") and (number[1:].isdigit() or number == "-")

    def validate(self, text: str, pos: int):  # noqa: D102 (Qt override)
        if self.minimum() >= 0 and self._negative(text):
            return QValidator.State.Intermediate, text, pos
        return super().validate(text, pos)

    def fixup(self, text: str) -> str:  # noqa: D102 (Qt override)
        if self.minimum() >= 0 and self._negative(text):  # the value typed over is still the value
            if self.value() == self.minimum() and self.specialValueText():
                return self.specialValueText()
            return self.prefix() + self.textFromValue(self.value()) + self.suffix()
        return super().fixup(text)
