"""Keys that belong to one widget while it has the keyboard: the inline editors' (message edit,
summary edit: Ctrl+Enter saves, Esc cancels) and the sidebar's (Esc clears the search, Delete
deletes the selected conversation)."""

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeySequence


class WidgetKeys(QObject):
    """An event filter on `widget` that calls `slot` for `keys` while the widget has focus.

    It accepts the ShortcutOverride event for those keys, so the widget's key wins over a
    window-wide shortcut on the same key; two shortcuts on one key would be ambiguous to Qt and
    neither would fire. (A QShortcut cannot do this, and PySide6's QShortcut(keys, parent,
    callable, context=…) ignores `context` besides.) Except while the window has an enabled
    action on that key: Esc stops a streaming answer wherever the keyboard is (a trial's Esc did
    nothing with the keyboard in the empty search field); the widget's key works again once the
    action is off. No signals."""

    def __init__(self, keys: QKeySequence, widget, slot):
        super().__init__(widget)
        self._combos = {(combo.key(), combo.keyboardModifiers()) for combo in (keys[i] for i in range(keys.count()))}
        self._slot = slot
        widget.installEventFilter(self)

    def _matches(self, event) -> bool:
        modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        return (Qt.Key(event.key()), modifiers) in self._combos

    @staticmethod
    def _window_takes(widget, event) -> bool:
        """Whether `widget`'s window has an enabled action bound to the key of `event`."""
        pressed = QKeySequence(event.keyCombination())
        return any(action.isEnabled() and pressed in action.shortcuts() for action in widget.window().actions())

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt override)
        kind = event.type()
        if kind == QEvent.Type.ShortcutOverride and self._matches(event):
            if self._window_takes(watched, event):
                return False  # the window's action fires as a shortcut
            event.accept()  # deliver it to the widget as a key press, not as a shortcut
            return True
        if kind == QEvent.Type.KeyPress and self._matches(event):
            self._slot()
            return True
        return False


def widget_shortcut(keys: QKeySequence, widget, slot) -> WidgetKeys:
    """`slot()` on `keys` while `widget` has focus (see WidgetKeys)."""
    return WidgetKeys(keys, widget, slot)


def install_edit_shortcuts(editor, save, cancel) -> None:
    """Ctrl+Enter saves, Esc cancels, while `editor` has focus."""
    widget_shortcut(QKeySequence("Ctrl+Return"), editor, save)
    widget_shortcut(QKeySequence("Ctrl+Enter"), editor, save)
    widget_shortcut(QKeySequence(Qt.Key.Key_Escape), editor, cancel)
