"""Generation settings: system prompt, max_new_tokens, temperature, top_p, and which backend
answers (local model or a remote OpenAI-compatible server)."""

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QPlainTextEdit,
    QSpinBox,
    QVBoxLayout,
)

from app.core.backend_settings import BackendSettings
from app.core.settings import GenerationSettings
from app.ui.backend_form import BackendForm


class SettingsDialog(QDialog):
    """Edit a GenerationSettings snapshot; `result_settings()` returns the edited copy.

    backend: the conversation's BackendSettings (None: no backend section); `result_backend()`
    and `entered_api_key()` return the edits (see BackendForm). key_stored: a key is on file.
    """

    def __init__(self, settings: GenerationSettings, parent=None, backend: BackendSettings | None = None,
                 key_stored: bool = False):
        super().__init__(parent)
        self.setWindowTitle("Generation settings")
        self.system_prompt = QPlainTextEdit(settings.system_prompt)
        self.system_prompt.setFixedHeight(90)
        self.max_new_tokens = QSpinBox()
        self.max_new_tokens.setRange(1, 32768)
        self.max_new_tokens.setValue(settings.max_new_tokens)
        self.max_new_tokens.setSuffix(" tokens")
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.0, 2.0)
        self.temperature.setSingleStep(0.05)
        self.temperature.setValue(settings.temperature)
        self.temperature.setToolTip("0 = greedy decoding (deterministic)")
        self.top_p = QDoubleSpinBox()
        self.top_p.setRange(0.01, 1.0)
        self.top_p.setSingleStep(0.05)
        self.top_p.setValue(settings.top_p)
        self.top_p.setToolTip("nucleus sampling: keep the smallest set of tokens with this total probability")
        self.context_tokens = QSpinBox()
        self.context_tokens.setRange(0, 1_048_576)
        self.context_tokens.setSingleStep(1024)
        self.context_tokens.setValue(settings.context_tokens)
        self.context_tokens.setSpecialValueText("model's full context")
        self.context_tokens.setSuffix(" tokens")
        self.context_tokens.setToolTip("Cap the context window below the model's own: older turns beyond "
                                       "it are folded into a summary. Smaller = less KV cache memory.")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        outer = QVBoxLayout(self)
        form = QFormLayout()
        form.addRow("System prompt", self.system_prompt)
        form.addRow("Max new tokens", self.max_new_tokens)
        form.addRow("Temperature", self.temperature)
        form.addRow("Top-p", self.top_p)
        form.addRow("Context window", self.context_tokens)
        outer.addLayout(form)
        self.backend_form = BackendForm(backend or BackendSettings(), key_stored)
        group = QGroupBox("Backend (this conversation)")
        QVBoxLayout(group).addWidget(self.backend_form)
        group.setVisible(backend is not None)
        outer.addWidget(group)
        outer.addWidget(buttons)

    def accept(self) -> None:
        """Stays open, with the reason under the backend form, while the backend is unusable."""
        if self.backend_form.isVisibleTo(self) and self.backend_form.problem():
            return
        super().accept()

    def result_backend(self) -> BackendSettings:
        return self.backend_form.result()

    def entered_api_key(self) -> str | None:
        """The API key typed (None: keep the stored one; "": forget it)."""
        return self.backend_form.entered_key()

    def result_settings(self) -> GenerationSettings:
        return GenerationSettings(
            system_prompt=self.system_prompt.toPlainText().strip(),
            max_new_tokens=self.max_new_tokens.value(),
            temperature=self.temperature.value(),
            top_p=self.top_p.value(),
            context_tokens=self.context_tokens.value(),
        ).validated()
