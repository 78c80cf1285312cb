"""A spin box for counts that never turns a typed "-5" into 5 or "99999" into 9999 and says its
unit in the number's grammatical number ("1 token", "2 tokens")."""

from collections.abc import Callable

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QSpinBox

from app.ui.typed_bounds import TypedBounds


class CountSpinBox(TypedBounds, QSpinBox):
    """QSpinBox for a count (tokens, threads, MiB, turns) or another whole number (a seed).

    Qt's own QSpinBox refuses the '-' key when the minimum is not negative, so typing "-5" leaves
    "5" in the field, a value the user never asked for (new-user trial: Max new tokens -5 became
    5), and drops the digits past its maximum (999999999 became 9999). Here the keys stay on
    screen while typing, and Enter or leaving the field puts the value back to what it was before
    (a minus sign) or makes it the maximum (app.ui.typed_bounds).

    A counted suffix (`set_counted_suffix`) follows the value: " token" at 1, " tokens" otherwise
    in English, from the plural forms of the translation. No signals beyond QSpinBox's."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._counted_suffix: Callable[[int], str] | None = None
        self.valueChanged.connect(self._on_value_changed)

    def set_counted_suffix(self, suffix: Callable[[int], str]) -> None:
        """Show `suffix(value)` after the number, again whenever the value changes; `suffix` is the
        owner's plural string through its class, e.g. ``lambda n: SettingsDialog.tr(" tokens", "", n)``
        (lupdate reads it as a plural message of that context; headroom_en.ts gives " token" for 1).
        Not ``self.tr``: a lambda holding the owner makes a cycle owner → spin box → lambda → owner
        that the garbage collector breaks after Qt deleted the owner with its window, a segfault in
        a later constructor (CI: tests/ui/test_appearance.py's dark test, then the next window)."""
        self._counted_suffix = suffix
        self._show_counted_suffix()

    def setValue(self, value: int) -> None:  # Qt override: a value set while signals are blocked
        super().setValue(value)
        self._show_counted_suffix()

    @Slot(int)
    def _on_value_changed(self, _value: int) -> None:
        self._show_counted_suffix()

    def _show_counted_suffix(self) -> None:
        if self._counted_suffix is None:
            return
        suffix = self._counted_suffix(self.value())
        if suffix != self.suffix():  # setSuffix rewrites the field: only when the word changes, not per key
            self.setSuffix(suffix)
