"""The window's commands as QActions, with their menus (File, Edit, View, Help) and keys.

Each command is one QAction: the menu entry, the toolbar button and the keyboard shortcut are
the same object, so they cannot disagree. Keys are Qt's standard ones for the platform where Qt
has one (New, Open, Find, Save As, Cancel, Help) and the common key otherwise: Qt's table has no
Quit on Windows and no Preferences on Linux, so Ctrl+Q and Ctrl+, stand in there.
Help → Keyboard shortcuts lists the keys read from the actions themselves.
"""

from __future__ import annotations

import html
import re

from PySide6.QtCore import QObject, Qt, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMessageBox

StandardKey = QKeySequence.StandardKey
# an access key written after the words, as CJK menus do: "설정(&S)…"
_TRAILING_ACCESS_KEY = re.compile(r"\s*\(&[^&]\)")


def button_text(menu_text: str) -> str:
    """`menu_text` as a toolbar button says it: no access key ("&Open model…" → "Open model",
    "모델 열기(&O)…" → "모델 열기") and no ellipsis."""
    return re.sub(r"&(.)", r"\1", _TRAILING_ACCESS_KEY.sub("", menu_text)).removesuffix("…").strip()


def keys_for(standard: StandardKey | None, fallback: str = "") -> list[QKeySequence]:
    """The platform's key bindings for `standard`, or [`fallback`] where it has none."""
    bindings = QKeySequence.keyBindings(standard) if standard is not None else []
    if not bindings and fallback:
        bindings = [QKeySequence(fallback)]
    return bindings


class WindowMenus(QObject):
    """Builds the actions and the menu bar of `window` (a QMainWindow); `memory_action` is the
    memory dock's toggle. No signals: the window connects each action's `triggered`.

    Actions: new_chat, open_model, export, quit (File); copy_answer, find, stop, settings
    (Edit); memory (View); shortcuts, about (Help). `stop` (Esc) is enabled only while an
    answer streams, so Esc stays free for the widgets the rest of the time.
    """

    def __init__(self, window, memory_action: QAction):
        super().__init__(window)
        self._window = window
        self.new_chat = self._action(self.tr("&New chat"), keys_for(StandardKey.New, "Ctrl+N"))
        self.open_model = self._action(self.tr("&Open model…"), keys_for(StandardKey.Open, "Ctrl+O"))
        self.export = self._action(self.tr("&Export conversation…"),
                                   keys_for(StandardKey.SaveAs, "Ctrl+Shift+S"))
        self.quit = self._action(self.tr("&Quit"), keys_for(StandardKey.Quit, "Ctrl+Q"))
        self.quit.setMenuRole(QAction.MenuRole.QuitRole)
        self.copy_answer = self._action(self.tr("&Copy last answer"), [QKeySequence("Ctrl+Shift+C")])
        self.find = self._action(self.tr("&Find conversations…"), keys_for(StandardKey.Find, "Ctrl+F"))
        self.stop = self._action(self.tr("S&top the answer"), keys_for(StandardKey.Cancel, "Esc"))
        self.stop.setEnabled(False)
        self.settings = self._action(self.tr("&Settings…"), keys_for(StandardKey.Preferences, "Ctrl+,"))
        self.settings.setMenuRole(QAction.MenuRole.PreferencesRole)
        self.memory = memory_action  # its text is the dock's title ("VRAM", "Memory — RSS …")
        self.memory.setShortcuts([QKeySequence("Ctrl+M")])
        self.shortcuts = self._action(self.tr("&Keyboard shortcuts"), keys_for(StandardKey.HelpContents, "F1"))
        self.about = self._action(self.tr("&About Headroom"), [])
        self.about.setMenuRole(QAction.MenuRole.AboutRole)
        self.shortcuts_box: QMessageBox | None = None
        bar = window.menuBar()
        self._menu(bar, self.tr("&File"), (self.new_chat, self.open_model, self.export, None, self.quit))
        self._menu(bar, self.tr("&Edit"), (self.copy_answer, self.find, None, self.stop, None, self.settings))
        self._menu(bar, self.tr("&View"), (self.memory,))
        self._menu(bar, self.tr("&Help"), (self.shortcuts, None, self.about))
        self.shortcuts.triggered.connect(self._on_shortcuts_triggered)

    def _action(self, text: str, keys: list[QKeySequence]) -> QAction:
        action = QAction(text, self._window)
        action.setShortcuts(keys)
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self._window.addAction(action)  # the keys work with the menu bar hidden, too
        return action

    @staticmethod
    def _menu(bar, title: str, actions) -> None:
        menu = bar.addMenu(title)
        for action in actions:
            if action is None:
                menu.addSeparator()
            else:
                menu.addAction(action)

    def toolbar_actions(self) -> list[QAction]:
        """The actions the toolbar shows, with short button texts (QAction.iconText): the menu
        text without its access key; the memory dock's toggle says "Memory" (its menu entry keeps
        the dock's title, "Memory — RSS / system memory" on a CPU)."""
        actions = [self.new_chat, self.open_model, self.settings, self.memory]
        for action in actions[:-1]:
            action.setIconText(button_text(action.text()))
        self.memory.setIconText(self.tr("Memory"))
        self.memory.setToolTip(self.tr("Show or hide the memory panel"))
        return actions

    def keyed_actions(self) -> list[QAction]:
        """The actions that have a key, in menu order."""
        actions = (self.new_chat, self.open_model, self.export, self.quit, self.copy_answer, self.find,
                   self.stop, self.settings, self.memory, self.shortcuts)
        return [action for action in actions if not action.shortcut().isEmpty()]

    def shortcut_rows(self) -> list[tuple[str, str]]:
        """(command, key) for every keyed action plus the composer's own keys, as shown in
        Help → Keyboard shortcuts (keys in the platform's native spelling)."""
        # the primary key only: the others are media keys ("New", "Find") few keyboards have
        rows = [(button_text(action.text()),
                 action.shortcut().toString(QKeySequence.SequenceFormat.NativeText))
                for action in self.keyed_actions()]
        rows += [(self.tr("Send the message"), self.tr("Enter")),
                 (self.tr("New line in the message"), self.tr("Shift+Enter")),
                 (self.tr("Save an edited message"), self.tr("Ctrl+Enter"))]
        return rows

    @Slot()
    def _on_shortcuts_triggered(self) -> None:
        rows = "".join(f"<tr><td>{html.escape(command)}</td><td>&nbsp;&nbsp;<b>{html.escape(keys)}</b></td></tr>"
                       for command, keys in self.shortcut_rows())
        box = QMessageBox(QMessageBox.Icon.NoIcon, self.tr("Keyboard shortcuts"),
                          f"<table>{rows}</table>", QMessageBox.StandardButton.Close, self._window)
        box.setObjectName("shortcutsBox")
        box.setTextFormat(Qt.TextFormat.RichText)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.shortcuts_box = box
        box.open()  # window-modal, never blocks the event loop
