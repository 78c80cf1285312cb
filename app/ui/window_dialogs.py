"""The dialogs the main window opens for the open chat: admission remedies after a refused turn,
Open model, Settings, pinned notes, presets, and the file pickers for export and diagnostics.

Each dialog is built when it is asked for, over the window, and its answer goes straight to the
chat's flows; nothing here reads the window. File pickers start in the folder last used for their
kind of file (`folders`, app.chat.file_folders), never in the working directory; a save's folder
is remembered once its file is written there, never for a save that failed. Expected
failures and notices go through the chat's one notice funnel. The last admission, notes and
presets dialogs stay reachable (`admission_dialog`, `notes_dialog`, `presets_dialog`) for the
tests and the flows that update an open one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Qt, Slot
from PySide6.QtWidgets import QApplication, QWidget

from app.chat.conversations import clean_title
from app.chat.file_folders import FileFolders
from app.core.last_folders import DIAGNOSTICS, EXPORT, PRESETS
from app.ui.admission_dialog import AdmissionDialog
from app.ui.file_pickers import save_path
from app.ui.theme import apply_theme

if TYPE_CHECKING:
    from app.chat.chat import Chat

# lupdate reads translate("Context", "source") calls; the texts keep the catalogue's "MainWindow"
# context they had when the window opened these dialogs itself
translate = QCoreApplication.translate


NAME_BYTES = 200
"""The most UTF-8 bytes of a proposed export name before its suffix: file systems allow 255 a name,
and the dialog may add " (2)" (trial 7: 75 emoji, 80 characters but 303 bytes, failed with "File
name too long" in the crash dialog)."""


def export_name(title: str, suffix: str = ".md") -> str:
    """The file name Export proposes: the chat's title as the list shows it (clean_title: no bidi
    or control characters, which could turn a name around; characters that file systems refuse
    replaced; at most 80 characters and NAME_BYTES bytes, whole characters) + `suffix`;
    "conversation" for a title with nothing usable."""
    name = re.sub(r'[\s\\/:*?"<>|\x00-\x1f]+', " ", clean_title(title)).strip(" .")[:80]
    name = name.encode("utf-8")[:NAME_BYTES].decode("utf-8", "ignore").strip() or "conversation"
    return f"{name}{suffix}"


class WindowDialogs(QObject):
    """Opens the chat's dialogs over `parent` (a QWidget, normally the main window). No signals;
    it connects itself to the chat's turn_refused and offers the admission remedies there."""

    def __init__(self, chat: Chat, parent: QWidget):
        super().__init__(parent)
        self._chat = chat
        self._parent = parent
        self.admission_dialog: AdmissionDialog | None = None  # the last refusal's remedies
        self.notes_dialog = self.presets_dialog = None  # the last pinned-notes / presets dialog opened
        self.folders = FileFolders(chat)  # where each kind of file picker starts
        chat.turn_refused.connect(self._on_turn_refused)

    @Slot(object, object)
    def _on_turn_refused(self, decision, projection) -> None:
        self.admission_dialog = AdmissionDialog(decision, projection, self._parent)
        self.admission_dialog.remedy_chosen.connect(
            lambda choice: self._chat.turns.apply_remedy(choice, decision))
        self.admission_dialog.open()  # window-modal, never blocks the event loop

    def cancel_remedies(self) -> None:
        """Answer the remedies dialog, when one is still open, with Cancel: its message goes back
        into the composer. The window calls it as it closes, before the chat does: left open, the
        dialog was closed by Qt's quit after the Store, and its Cancel raised there (new-user trial:
        Ctrl+C over the dialog, sqlite3.ProgrammingError on the way out, the paste lost)."""
        dialog = self.admission_dialog
        if dialog is not None and dialog.isVisible():
            dialog.reject()

    @Slot()
    def open_model(self) -> None:
        """File → Open model: the models this machine has and whether they fit."""
        from app.engine.loading.catalog import Catalog
        from app.ui.open_model_dialog import OpenModelDialog

        chat = self._chat
        # the open model is freed before the next loads (VRAM kept after unload, bitsandbytes #1611)
        catalog = Catalog.for_this_machine(
            chat.device_preference, chat.report.weight_bytes if chat.report else 0,
            chat.settings.generation.context_tokens)
        dialog = OpenModelDialog(catalog, chat.settings, self._parent, jobs=chat.jobs, folders=self.folders)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.model_chosen.connect(chat.models.open_chosen)
        dialog.open()

    @Slot()
    def settings(self) -> None:
        """Edit → Settings: adopted for new chats and the open conversation."""
        from app.ui.settings_dialog import SettingsDialog

        chat = self._chat
        settings = chat.settings
        own = settings.own_context(chat.model_path) if chat.model_path and not settings.backend.is_remote else 0
        dialog = SettingsDialog(settings.generation, self._parent, settings.backend, chat.backend.api_key_stored(),
                                language=settings.language, model_context=own, appearance=settings.appearance)
        if dialog.exec():
            chat.backend.apply_settings(dialog.result_settings(), dialog.result_backend(),
                                        dialog.entered_api_key(), dialog.result_language(),
                                        dialog.result_appearance())
            chat.presets.settings_edited()  # still the preset's settings, or now custom
            if dialog.result_appearance() != settings.appearance:  # at once, not at the next start
                apply_theme(QApplication.instance(), dialog.result_appearance())

    @Slot()
    def notes(self) -> None:
        from app.ui.notes_dialog import NotesDialog

        dialog = self.notes_dialog = NotesDialog(self._chat.pinned_notes, self._parent)
        dialog.accepted.connect(lambda: self._chat.notes.edit(dialog.notes()))
        dialog.open()  # window-modal, never blocks the event loop

    @Slot()
    def presets(self) -> None:
        from app.ui.presets_dialog import PresetsDialog

        chat, presets = self._chat, self._chat.presets
        dialog = self.presets_dialog = PresetsDialog(list(presets.library.all), presets.current(), self._parent,
                                                     folders=self.folders)
        chat.presets_changed.connect(dialog.set_presets)
        dialog.apply_requested.connect(presets.apply)
        dialog.save_requested.connect(presets.save_current)
        dialog.delete_requested.connect(presets.delete)
        dialog.import_requested.connect(lambda path: presets.import_file(Path(path)))
        dialog.export_requested.connect(lambda path, names: self._remember_if(
            presets.export_file(Path(path), names or None), PRESETS, path))
        dialog.finished.connect(lambda _result: chat.presets_changed.disconnect(dialog.set_presets))
        dialog.open()

    @Slot(int, str)
    def export_conversation(self, conversation_id: int, fmt: str) -> None:
        """The sidebar's Export: conversation `conversation_id` as `fmt` ("markdown" or "json")."""
        suffix = ".md" if fmt == "markdown" else ".json"
        title = translate("MainWindow", "Export conversation")
        name = export_name(self._chat.store.load_conversation(conversation_id).info.title, suffix)
        path, _ = save_path(self._parent, self.folders, EXPORT, title, name)
        if path:
            self._remember_if(self._chat.conversations.export_conversation(conversation_id, fmt, Path(path)),
                              EXPORT, path)

    @Slot()
    def export_open(self) -> None:
        """File → Export: the open conversation, as Markdown or JSON by the chosen filter."""
        chat = self._chat
        if chat.conversation_id is None:
            chat.announce(translate("MainWindow", "Nothing to export yet: this chat has no messages."), "status")
            return
        markdown, json = translate("MainWindow", "Markdown (*.md)"), translate("MainWindow", "JSON (*.json)")
        title = translate("MainWindow", "Export conversation")
        name = export_name(chat.store.load_conversation(chat.conversation_id).info.title)
        path, chosen = save_path(self._parent, self.folders, EXPORT, title, name, f"{markdown};;{json}")
        if path:
            fmt = "json" if chosen == json or path.lower().endswith(".json") else "markdown"
            self._remember_if(chat.conversations.export_conversation(chat.conversation_id, fmt, Path(path)),
                              EXPORT, path)

    @Slot()
    def diagnostics(self) -> None:
        """The memory panel's Save diagnostics: memory_summary, LoadReport, projected vs measured peaks."""
        path, _ = save_path(self._parent, self.folders, DIAGNOSTICS,
                            translate("MainWindow", "Save diagnostics report"), "headroom-diagnostics.md")
        if path:
            self._remember_if(self._chat.memory.save_diagnostics(Path(path)), DIAGNOSTICS, path)

    def _remember_if(self, written: bool, kind: str, path: str) -> None:
        """The next `kind` dialog starts in `path`'s folder when the file was `written` there: a
        failed save's folder may not be there, or take no files (new-user trial: "/proc" kept
        after a failed export, and the next Export dialog hung reading it)."""
        if written:
            self.folders.remember(kind, path)
