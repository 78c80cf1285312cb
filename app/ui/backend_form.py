"""The backend part of the settings dialog: local model or a remote OpenAI-compatible server
(base URL, model name, API key). The key field never shows a stored key; it only replaces it.
"""

from dataclasses import replace

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QLabel, QLineEdit, QWidget

from app.core.backend_settings import LOCAL, REMOTE, BackendSettings, BackendSettingsError


class BackendForm(QWidget):
    """Edits a BackendSettings snapshot; `result()` returns the edited copy and `entered_key()`
    the API key to store (None: keep the stored one, "": forget it)."""

    def __init__(self, backend: BackendSettings, key_stored: bool = False, parent=None):
        super().__init__(parent)
        self._backend = backend
        self.kind = QComboBox()
        self.kind.addItem(self.tr("Local model (this computer)"), LOCAL)
        self.kind.addItem(self.tr("Remote server (OpenAI-compatible, e.g. vLLM)"), REMOTE)
        self.kind.setCurrentIndex(self.kind.findData(backend.kind))
        self.base_url = QLineEdit(backend.remote.base_url)
        self.base_url.setPlaceholderText("http://gpu-box:8000/v1")
        self.model = QLineEdit(backend.remote.model)
        self.model.setPlaceholderText(self.tr("The served model name, e.g. meta-llama/Llama-3.1-8B-Instruct"))
        self.api_key = QLineEdit()
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.api_key.setPlaceholderText(self.tr("Stored — type to replace") if key_stored
                                        else self.tr("Optional (vllm serve --api-key)"))
        self.forget_key = QCheckBox(self.tr("Forget the stored key"))
        self.forget_key.setVisible(key_stored)
        self.note = QLabel(self.tr("Prompt tokens are counted with a local tokenizer when the model name matches "
                                   "a local folder, else with the server's /tokenize (vLLM), else as ≈ 4 "
                                   "characters per token + 25 %."))
        self.note.setWordWrap(True)
        self.problem_label = QLabel("")
        self.problem_label.setObjectName("backendProblem")
        self.problem_label.setTextFormat(Qt.TextFormat.PlainText)  # server error text shows literally
        self.problem_label.setWordWrap(True)  # red, from the themed stylesheet
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow(self.tr("Answered by"), self.kind)
        form.addRow(self.tr("Server URL"), self.base_url)
        form.addRow(self.tr("Model name"), self.model)
        form.addRow(self.tr("API key"), self.api_key)
        form.addRow("", self.forget_key)
        form.addRow(self.note)
        form.addRow(self.problem_label)
        self.kind.currentIndexChanged.connect(self._on_kind_changed)
        self._on_kind_changed()

    @Slot()
    def _on_kind_changed(self) -> None:
        remote = self.kind.currentData() == REMOTE
        for widget in (self.base_url, self.model, self.api_key, self.forget_key, self.note):
            widget.setEnabled(remote)
        self.problem_label.setText("")

    def result(self) -> BackendSettings:
        remote = replace(self._backend.remote, base_url=self.base_url.text(), model=self.model.text())
        return BackendSettings(self.kind.currentData(), remote).validated()

    def entered_key(self) -> str | None:
        if self.api_key.text().strip():
            return self.api_key.text().strip()
        return "" if self.forget_key.isChecked() else None

    def problem(self) -> str:
        """Why the entered backend cannot be used (shown under the form), or ""."""
        backend = self.result()
        try:
            if backend.is_remote:
                backend.remote.check()
        except BackendSettingsError as exc:  # its English line names the field; said here in the UI's language
            if "user name or password" in str(exc):  # the URL itself not repeated: it holds a secret
                text = self.tr("The server URL holds a name or password before “@”. Put the key in the API key "
                               "field instead.")
            elif "URL" in str(exc):
                text = self.tr("The server URL {0} is not an http(s) URL such as http://gpu-box:8000/v1.").format(
                    backend.remote.base_url or self.tr("(empty)"))
            else:
                text = self.tr("Enter the model name the server serves.")
            self.problem_label.setText(text)
            return str(exc)
        self.problem_label.setText("")
        return ""
