"""Generation settings: system prompt, max_new_tokens, temperature, top_p."""

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QPlainTextEdit,
    QSpinBox,
)

from app.core.settings import GenerationSettings


class SettingsDialog(QDialog):
    """Edit a GenerationSettings snapshot; `result_settings()` returns the edited copy."""

    def __init__(self, settings: GenerationSettings, parent=None):
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
        form = QFormLayout(self)
        form.addRow("System prompt", self.system_prompt)
        form.addRow("Max new tokens", self.max_new_tokens)
        form.addRow("Temperature", self.temperature)
        form.addRow("Top-p", self.top_p)
        form.addRow("Context window", self.context_tokens)
        form.addRow(buttons)

    def result_settings(self) -> GenerationSettings:
        return GenerationSettings(
            system_prompt=self.system_prompt.toPlainText().strip(),
            max_new_tokens=self.max_new_tokens.value(),
            temperature=self.temperature.value(),
            top_p=self.top_p.value(),
            context_tokens=self.context_tokens.value(),
        ).validated()
