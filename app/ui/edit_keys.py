"""Keyboard shortcuts shared by the inline editors (message edit, summary edit)."""

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut


def install_edit_shortcuts(editor, save, cancel) -> None:
    """Ctrl+Enter saves, Esc cancels, while `editor` has focus."""
    for keys in ("Ctrl+Return", "Ctrl+Enter"):
        QShortcut(QKeySequence(keys), editor, save, context=Qt.ShortcutContext.WidgetShortcut)
    QShortcut(QKeySequence(Qt.Key.Key_Escape), editor, cancel, context=Qt.ShortcutContext.WidgetShortcut)
