"""Settings and the backend that answers: adopting edited generation and backend settings (with
the API key kept out of settings.json), and what the chosen backend changes — a remote server's
/metrics watched by the server monitor, the backend named in the window, and whether Send needs
a loaded model (only the local backend does).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Slot

from app.chat import saving
from app.chat.error_text import os_error_text
from app.core.backend_settings import BackendSettings, conversation_settings
from app.core.secrets import key_file_path, load_api_key, save_api_key
from app.core.settings import GenerationSettings

if TYPE_CHECKING:
    from app.chat.chat import Chat


translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls


class BackendFlow(QObject):
    """Applies chat.settings.backend; remote_report is the RemoteReport of the server that
    answered last (None until one has). No signals of its own: the Chat's backend_changed,
    backend_reported and can_send_changed are emitted here (ModelFlow calls name_backend when
    the model changes)."""

    def __init__(self, chat: Chat):
        super().__init__(chat)
        self._chat = chat
        self.remote_report = None
        chat.worker.backend_chosen.connect(self._on_backend_chosen)

    def api_key_stored(self) -> bool:
        """Whether an API key is stored for the remote backend's URL (for the Settings dialog)."""
        remote = self._chat.settings.backend.remote
        return bool(remote.base_url and load_api_key(remote.base_url))

    def apply_settings(self, generation: GenerationSettings, backend: BackendSettings,
                       api_key: str | None = None, language: str | None = None,
                       appearance: str | None = None) -> None:
        """Adopt edited settings: saved as the defaults for new chats and, for the open
        conversation, as its own. api_key: store it for the backend's URL (None: unchanged,
        "": forget it); it goes to the keyring or an owner-only file, never to settings.json.
        language: the window's language ("auto", "en", "ko"; None: unchanged), used from the
        next start. appearance: "system", "light" or "dark" (None: unchanged), saved here; the
        window applies it (app.ui.theme.apply_theme)."""
        chat = self._chat
        previous_language = chat.settings.language
        chat.save_defaults(lambda settings: replace(
            settings, generation=generation, backend=backend,
            language=previous_language if language is None else language,
            appearance=settings.appearance if appearance is None else appearance))
        if chat.settings.language != previous_language:
            chat.announce(translate("Backend", "The new language is used from the next start of Headroom"), "status")
        if api_key is not None and backend.remote.base_url:
            try:
                where, kept_as = save_api_key(backend.remote.base_url, api_key)
            except OSError as exc:
                # the key file's own name: the error may name its temp file
                chat.announce(translate("Backend", "Could not store the API key in {0}: {1}. It is used until "
                                                   "Headroom closes.").format(key_file_path(), os_error_text(exc)),
                              "error")
            else:
                if kept_as is not None:  # its keys were out of use; now kept, not overwritten
                    chat.announce(translate("Backend", "api_keys.json could not be read, so the keys in it were not "
                                                       "used; it was kept as {0}.").format(kept_as), "error")
                chat.announce(translate("Backend", "API key forgotten") if not api_key else
                              translate("Backend", "API key stored in the OS keyring") if where == "keyring" else
                              translate("Backend", "API key stored in api_keys.json (owner-only)"), "status")
        if chat.conversation_id is not None:  # the open conversation keeps its own settings
            stored = conversation_settings(generation, backend)
            chat.save(lambda: chat.store.update_settings(chat.conversation_id, stored), saving.not_kept())
        self.apply_backend()
        chat.models.say_new_tokens_limit()

    def apply_backend(self) -> None:
        """Watch and name the current backend: a remote server's metrics are polled; sending
        needs a loaded model only for the local backend."""
        chat = self._chat
        backend = chat.settings.backend
        chat.server_monitor.watch(backend.remote if backend.is_remote else None)
        chat.backend_changed.emit(backend.remote.display if backend.is_remote else None)
        self.refresh_can_send()
        self.name_backend()

    def name_backend(self) -> None:
        """Say what answers this chat's turns (Chat.backend_reported): the local model while one
        is loaded, None while none is; a remote server's RemoteReport once that server and model
        have answered (None before: its context and token counting are read at its first turn).
        Said when a model loads or goes, when the backend changes and when a turn picks its
        backend: trial 9 saw "answered by local model" in a new chat but not after a restart,
        until a reply was written."""
        chat = self._chat
        backend = chat.settings.backend
        if not backend.is_remote:
            report = chat.report
        else:
            last = self.remote_report
            same = last is not None and (last.base_url, last.name) == (backend.remote.base_url, backend.remote.model)
            report = last if same else None
        chat.backend_reported.emit(report)

    def refresh_can_send(self) -> None:
        """Say whether something can answer: a loaded model, or a remote backend."""
        chat = self._chat
        chat.can_send_changed.emit(chat.report is not None or chat.settings.backend.is_remote)

    @Slot(int, object)
    def _on_backend_chosen(self, _request_id: int, report) -> None:
        if getattr(report, "kind", "local") == "remote":
            self.remote_report = report
        self._chat.backend_reported.emit(report)
