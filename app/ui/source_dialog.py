"""One document excerpt an answer was given, opened from its sources line (issue 18, item 3):
where it comes from (file, excerpt number, section, page, characters) and its text."""

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls


def source_place(citation) -> str:
    """"manual.pdf · excerpt 17 · Install > Linux · page 12 · characters 40,120–40,610"."""
    parts = [citation.name, translate("SourceDialog", "excerpt {0}").format(citation.chunk_id)]
    if citation.heading:
        parts.append(citation.heading)
    if citation.page:
        parts.append(translate("SourceDialog", "page {0}").format(citation.page))
    parts.append(translate("SourceDialog", "characters {0}–{1}").format(f"{citation.start:,}", f"{citation.end:,}"))
    return " · ".join(parts)


class SourceDialog(QDialog):
    """Shows a Citation (app.core.document_prompt) read-only. No signals: close as any QDialog."""

    def __init__(self, citation, parent=None):
        super().__init__(parent)
        self.setObjectName("sourceDialog")
        self.setWindowTitle(self.tr("Source: {0}").format(citation.name))
        self.place_label = QLabel(source_place(citation))
        self.place_label.setObjectName("sourcePlace")
        self.place_label.setTextFormat(Qt.TextFormat.PlainText)  # a file name shows literally
        self.place_label.setWordWrap(True)
        self.text_view = QPlainTextEdit(citation.text)
        self.text_view.setObjectName("sourceText")
        self.text_view.setReadOnly(True)
        self.text_view.setAccessibleName(self.tr("Excerpt text"))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.place_label)
        layout.addWidget(self.text_view, 1)
        layout.addWidget(buttons)
        width = self.fontMetrics().averageCharWidth() * 80
        self.resize(width, width * 2 // 3)
