"""Edit the open chat's pinned notes (issue 17, item 5): facts kept in every prompt."""

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout

from app.core.pinned_notes import estimate_tokens


class NotesDialog(QDialog):
    """A text box for the notes with their estimated size; `notes()` is the edited text
    (stripped; "" removes them). No signals: accept/reject as any QDialog."""

    def __init__(self, notes: str, parent=None):
        super().__init__(parent)
        self.setObjectName("notesDialog")
        self.setWindowTitle(self.tr("Pinned notes"))
        explain = QLabel(self.tr("Kept in every prompt of this chat, after the system prompt, however long "
                                 "the chat grows. They take room in the context window."))
        explain.setWordWrap(True)
        self.editor = QPlainTextEdit(notes)
        self.editor.setObjectName("notesEditor")
        self.editor.setAccessibleName(self.tr("Pinned notes"))
        self.editor.setPlaceholderText(self.tr("e.g. My name is Ada. Answer in metric units."))
        self.size_label = QLabel()
        self.size_label.setObjectName("notesSize")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(explain)
        layout.addWidget(self.editor, 1)
        layout.addWidget(self.size_label)
        layout.addWidget(buttons)
        self.editor.textChanged.connect(self._on_text_changed)
        self._on_text_changed()
        width = self.fontMetrics().averageCharWidth() * 80
        self.resize(width, width * 2 // 3)

    def notes(self) -> str:
        return self.editor.toPlainText().strip()

    def _on_text_changed(self) -> None:
        tokens = estimate_tokens(self.editor.toPlainText())
        self.size_label.setText(self.tr("≈ {0} tokens in every prompt").format(f"{tokens:,}") if tokens
                                else self.tr("No notes: nothing extra in the prompt"))
