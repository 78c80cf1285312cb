"""The documents kept with a sent message, under its text: one chip per file ("manual.pdf ·
312 pages") with a ✕ that removes it from the chat (issue 18, item 4)."""

from collections.abc import Sequence

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QToolButton, QWidget

from app.ui.plain_text import plain_tooltip

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls


def document_extent(document) -> str:
    """"312 pages" for a paged document, else "12,345 characters", "1 character" (in the window's language)."""
    if document.pages > 1:
        return translate("DocumentChips", "{0} pages").format(f"{document.pages:,}")  # only ever 2 or more
    return DocumentChips.tr("{0} characters", "", len(document.text)).format(f"{len(document.text):,}")


class DocumentChips(QWidget):
    """Signals: remove_requested(int index) — the user removed the document at `index`."""

    remove_requested = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("documentChips")
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(0, 2, 0, 0)
        self._row.setSpacing(6)
        self._row.addStretch(1)
        self.chips: list[QLabel] = []
        self.remove_buttons: list[QToolButton] = []
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setVisible(False)

    def set_documents(self, documents: Sequence) -> None:
        """Show one chip per ExtractedDocument (none: the row hides)."""
        while self._row.count() > 1:
            widget = self._row.takeAt(0).widget()
            widget.hide()
            widget.deleteLater()
        self.chips, self.remove_buttons = [], []
        for index, document in enumerate(documents):
            chip = QLabel(f"{document.name} · {document_extent(document)}")
            chip.setObjectName("documentChip")
            chip.setTextFormat(Qt.TextFormat.PlainText)  # a file name shows literally
            chip.setToolTip(self.tr("Attached to this message; sent again when it is edited or answered again"))
            remove = QToolButton()
            remove.setObjectName("documentRemove")
            remove.setText("✕")
            remove.setToolTip(plain_tooltip(self.tr("Remove {0} from this chat").format(document.name)))
            remove.setAccessibleName(self.tr("Remove {0}").format(document.name))
            remove.setCursor(Qt.CursorShape.PointingHandCursor)
            remove.clicked.connect(lambda _checked=False, i=index: self.remove_requested.emit(i))
            self._row.insertWidget(self._row.count() - 1, chip)
            self._row.insertWidget(self._row.count() - 1, remove)
            self.chips.append(chip)
            self.remove_buttons.append(remove)
        self.setVisible(bool(documents))

    def set_removable(self, removable: bool) -> None:
        """False while a reply or summary is being written."""
        for button in self.remove_buttons:
            button.setEnabled(removable)
