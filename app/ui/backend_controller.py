"""Settings and the backend that answers: the Settings dialog, adopting its generation and
backend settings (with the API key kept out of settings.json), and what the chosen backend
changes in the window — a remote server's /metrics in the memory panel, the backend label in the
status bar, and whether Send needs a loaded model (only the local backend does).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot

from app.core.backend_settings import BackendSettings, conversation_settings
from app.core.settings import GenerationSettings, save_settings
from app.ui.settings_dialog import SettingsDialog

if TYPE_CHECKING:
    from app.ui.main_window import MainWindow


class BackendController(QObject):
    """Applies `window`'s settings.backend; remote_report is the RemoteReport of the server that
    answered last (None until one has). No signals."""

    def __init__(self, window: MainWindow):
        super().__init__(window)
        self._window = window
        self.remote_report = None

    @Slot()
    def _on_settings_triggered(self) -> None:
        from app.core.secrets import load_api_key

        w = self._window
        backend = w.settings.backend
        key_stored = bool(backend.remote.base_url and load_api_key(backend.remote.base_url))
        dialog = SettingsDialog(w.settings.generation, w, backend, key_stored)
        if dialog.exec():
            self.apply_settings(dialog.result_settings(), dialog.result_backend(), dialog.entered_api_key())

    def apply_settings(self, generation: GenerationSettings, backend: BackendSettings,
                       api_key: str | None = None) -> None:
        """Adopt edited settings: saved as the defaults for new chats and, for the open
        conversation, as its own. api_key: store it for the backend's URL (None: unchanged,
        "": forget it); it goes to the keyring or an owner-only file, never to settings.json."""
        from app.core.secrets import save_api_key

        w = self._window
        w.settings = replace(w.settings, generation=generation, backend=backend)
        save_settings(w.settings)
        if api_key is not None and backend.remote.base_url:
            try:
                where = save_api_key(backend.remote.base_url, api_key)
                w.status.showMessage("API key " + ("forgotten" if not api_key else
                                     "stored in the OS keyring" if where == "keyring" else
                                     "stored in api_keys.json (owner-only)"), 8000)
            except OSError as exc:
                w.chat_view.add_notice(f"Could not store the API key: {exc.strerror}", "error")
        if w.conversation_id is not None:  # the open conversation keeps its own settings
            w.store.update_settings(w.conversation_id, conversation_settings(generation, backend))
        self.apply_backend()

    def apply_backend(self) -> None:
        """Show and watch the current backend: a remote server's metrics in the memory panel;
        sending needs a loaded model only for the local backend."""
        w = self._window
        backend = w.settings.backend
        w.server_monitor.watch(backend.remote if backend.is_remote else None)
        w.vram_panel.show_remote(backend.remote.display if backend.is_remote else None)
        self.refresh_can_send()

    def refresh_can_send(self) -> None:
        """Enable Send when something can answer: a loaded model, or a remote backend."""
        w = self._window
        w.composer.set_can_send(w.report is not None or w.settings.backend.is_remote)

    @Slot(int, object)
    def _on_backend_chosen(self, _request_id: int, report) -> None:
        if getattr(report, "kind", "local") == "remote":
            self.remote_report = report
        self._window.status.show_backend(report)
