"""Manage presets (issue 17, item 2): the built-ins and the user's own, save the chat's settings as
a preset, remove one, import and export JSON files."""

import re

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
)

from app.chat.presets import display_description, display_name, setting_label
from app.core.last_folders import PRESETS
from app.ui.file_pickers import open_path, save_path


class PresetsDialog(QDialog):
    """Lists presets; commands go out as signals, the chat answers with `set_presets`.

    Signals: apply_requested(str name); save_requested(str name) — the chat's settings as a new
    preset; delete_requested(str name); import_requested(str path); export_requested(str path,
    list names) — the selected preset, or the user's own when none is selected.
    """

    apply_requested = Signal(str)
    save_requested = Signal(str)
    delete_requested = Signal(str)
    import_requested = Signal(str)
    export_requested = Signal(str, list)

    def __init__(self, presets: list, current: str, parent=None, folders=None):
        """folders: the chat's FileFolders, where import and export start (None: home)."""
        super().__init__(parent)
        self._folders = folders
        self.setObjectName("presetsDialog")
        self.setWindowTitle(self.tr("Presets"))
        self.list = QListWidget()
        self.list.setObjectName("presetList")
        self.list.setAccessibleName(self.tr("Presets"))
        self.description = QLabel()
        self.description.setTextFormat(Qt.TextFormat.PlainText)  # preset names and prompts show literally
        self.description.setWordWrap(True)
        self.description.setObjectName("presetDescription")
        self.apply_button = QPushButton(self.tr("Use in this chat"))
        self.save_button = QPushButton(self.tr("Save current settings…"))
        self.delete_button = QPushButton(self.tr("Remove"))
        self.import_button = QPushButton(self.tr("Import…"))
        self.export_button = QPushButton(self.tr("Export…"))
        row = QHBoxLayout()
        for button in (self.apply_button, self.save_button, self.delete_button):
            row.addWidget(button)
        row.addStretch(1)
        for button in (self.import_button, self.export_button):
            row.addWidget(button)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.description)
        layout.addLayout(row)
        layout.addWidget(close)
        self.list.currentItemChanged.connect(self._on_current_changed)
        self.list.itemDoubleClicked.connect(self._on_apply_clicked)
        self.apply_button.clicked.connect(self._on_apply_clicked)
        self.save_button.clicked.connect(self._on_save_clicked)
        self.delete_button.clicked.connect(self._on_delete_clicked)
        self.import_button.clicked.connect(self._on_import_clicked)
        self.export_button.clicked.connect(self._on_export_clicked)
        self.set_presets(presets, current)
        width = self.fontMetrics().averageCharWidth() * 90
        self.resize(width, width * 2 // 3)

    @Slot(list, str)
    def set_presets(self, presets: list, current: str) -> None:
        """Show `presets` (Preset objects), the chat's `current` one marked and selected."""
        selected = self.selected()
        self._presets = {p.name: p for p in presets}
        self.list.clear()
        for preset in presets:
            text = display_name(preset) + ("  ✓" if preset.name == current else "")
            if preset.builtin:
                text += "  " + self.tr("(built-in)")
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, preset.name)
            self.list.addItem(item)
            if preset.name == (selected or current):
                self.list.setCurrentItem(item)
        self._on_current_changed()

    def selected(self) -> str:
        item = self.list.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else ""

    @Slot()
    def _on_current_changed(self, *_args) -> None:
        preset = self._presets.get(self.selected())
        self.description.setText(_describe(preset) if preset else "")
        self.apply_button.setEnabled(preset is not None)
        self.delete_button.setEnabled(preset is not None and not preset.builtin)

    @Slot()
    def _on_apply_clicked(self, *_args) -> None:
        if self.selected():
            self.apply_requested.emit(self.selected())

    @Slot()
    def _on_save_clicked(self) -> None:
        name, ok = QInputDialog.getText(self, self.tr("Save as preset"), self.tr("Name of the new preset:"))
        if ok and name.strip():
            self.save_requested.emit(name.strip())

    @Slot()
    def _on_delete_clicked(self) -> None:
        if self.selected():
            self.delete_requested.emit(self.selected())

    @Slot()
    def _on_import_clicked(self) -> None:
        path = open_path(self, self._folders, PRESETS, self.tr("Import presets"), self.tr("Presets (*.json)"))
        if path:
            self.import_requested.emit(path)

    @Slot()
    def _on_export_clicked(self) -> None:
        path, _ = save_path(self, self._folders, PRESETS, self.tr("Export presets"), "presets.json",
                            self.tr("Presets (*.json)"))
        if path:
            self.export_requested.emit(path, [self.selected()] if self.selected() else [])


PROMPT_SHOWN_CHARS = 300
"""The most of a preset's system prompt its description shows (an imported prompt of 200,000
characters without a space hung the dialog 21 s and made it 1.4 million pixels wide)."""


def _describe(preset) -> str:
    """The description, then the settings it sets ("Temperature 0.2 · Top-k 20 · …", named as in
    Settings), then the start of its system prompt."""
    values = " · ".join(f"{setting_label(k)} {v}" for k, v in preset.values.items() if k != "system_prompt")
    prompt = preset.values.get("system_prompt") or ""
    if len(prompt) > PROMPT_SHOWN_CHARS:
        prompt = prompt[:PROMPT_SHOWN_CHARS].rstrip() + "…"
    prompt = re.sub(r"(\S{40})(?=\S)", "\\1\u200b", prompt)  # a break chance in a long run of non-spaces
    parts = [display_description(preset), values, f"“{prompt}”" if prompt else ""]
    return "\n".join(p for p in parts if p)
