"""The documents kept with a sent message, under its text: one chip per file ("manual.pdf ·
312 pages") with a ✕ that removes it from the chat (issue 18, item 4). A chip too narrow for its
text shortens the file's name in the middle and keeps its size whole, the whole text in its
tooltip (new-user trial 10: "notes.json · 1,837 chara", cut mid-word); chips that do not fit
beside each other go on the next line (WrapRow)."""

from collections.abc import Sequence

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QSizePolicy, QToolButton, QWidget

from app.ui.elided_label import ElidedLabel
from app.ui.plain_text import plain_tooltip
from app.ui.wrap_row import WrapRow

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
        self._row = WrapRow(self, spacing=10, line_spacing=4)
        self._row.setContentsMargins(0, 2, 0, 0)
        self.chips: list[ElidedLabel] = []
        self.remove_buttons: list[QToolButton] = []
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # its height follows its width
        self.setVisible(False)

    def set_documents(self, documents: Sequence) -> None:
        """Show one chip per ExtractedDocument (none: the row hides)."""
        while (item := self._row.takeAt(0)) is not None:
            item.widget().hide()
            item.widget().deleteLater()
        self.chips, self.remove_buttons = [], []
        for index, document in enumerate(documents):
            chip = ElidedLabel(document.name, kept=f" · {document_extent(document)}")  # plain text
            chip.setObjectName("documentChip")
            chip.setToolTip(self.tr("Attached to this message; sent again when it is edited or answered again"))
            remove = QToolButton()
            remove.setObjectName("documentRemove")
            remove.setText("✕")
            remove.setToolTip(plain_tooltip(self.tr("Remove {0} from this chat").format(document.name)))
            remove.setAccessibleName(self.tr("Remove {0}").format(document.name))
            remove.setCursor(Qt.CursorShape.PointingHandCursor)
            remove.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)  # the chip narrows, not ✕
            remove.clicked.connect(lambda _checked=False, i=index: self.remove_requested.emit(i))
            pair = QWidget()  # a chip and its ✕ stay on one line
            pair_row = QHBoxLayout(pair)
            pair_row.setContentsMargins(0, 0, 0, 0)
            pair_row.setSpacing(4)
            pair_row.addWidget(chip)
            pair_row.addWidget(remove)
            self._row.add_widget(pair)
            self.chips.append(chip)
            self.remove_buttons.append(remove)
        self.setVisible(bool(documents))

    def set_removable(self, removable: bool) -> None:
        """False while a reply or summary is being written."""
        for button in self.remove_buttons:
            button.setEnabled(removable)
