"""The row above the composer: "Attach…", and one chip per file attached to the next message
("report.pdf · reading 40%", "report.pdf · 12,345 characters, 3 pages"), each removable. Files
dropped onto the composer (or onto this row) are attached too.

After Attach… (files chosen or not), a drop, or removing the chip that had the keyboard, the
keyboard goes back to the message box: left on the button, the next Space would open the file
dialog again instead of typing a space.

Chips keep their whole text and go on the next line where the row has no room for them (WrapRow),
as the chips under a sent message do; only a chip wider than the whole row is shortened: its file
name in the middle, its status whole ("a-long-re…rt.pdf · 12,345 characters, 3 pages  ✕"), and
where even a few characters of the name leave no room for the status, the status goes
("a-long-re…rt.pdf  ✕"), never cut ("1…" read as a number: new-user trial 11). The tooltip says it
all. Shared out side by side, the chips had cut every status while half the row stood empty
(trial 11: "cp949.txt · 23 c…", "a_re…d.md · 1…")."""

from PySide6.QtCore import QEvent, QObject, Qt, Signal, Slot
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QAbstractScrollArea, QPushButton, QSizePolicy, QToolButton, QWidget

from app.core.last_folders import ATTACH
from app.ui.elided_label import MIN_CHARS
from app.ui.file_pickers import open_paths
from app.ui.wrap_row import WrapRow


def _shown(text: str) -> str:
    """A button's text as drawn ("&&" is one "&"; an access key's "&" is not in these)."""
    return text.replace("&&", "&")


def _chip_text(name: str, status: str) -> str:
    name = name.replace("&", "&&")  # "&" in a file name is no access key
    return f"{name} · {status}  ✕" if status else f"{name}  ✕"  # (no status: a chip squeezed to its name)


def _width(metrics: QFontMetrics, name: str, status: str) -> int:
    """The chip text's width in px, measured whole (a text is not quite as wide as its parts)."""
    return metrics.horizontalAdvance(_shown(_chip_text(name, status)))


def _fitted(metrics: QFontMetrics, name: str, status: str, width: int) -> tuple[str, str]:
    """`name` and `status` for a chip text at most `width` px wide: the name cut in the middle and
    the status whole; where the name would keep less than a few characters (MIN_CHARS), no status
    ("" — a count cut to "1…" reads as another number) and the name cut to the width."""
    if status:
        fewest = _elided(metrics, name, Qt.TextElideMode.ElideMiddle, metrics.horizontalAdvance(MIN_CHARS))
        if _width(metrics, fewest, status) <= width:
            return _cut_name(metrics, name, status, width), status
    return _cut_name(metrics, name, "", width), ""


def _cut_name(metrics: QFontMetrics, name: str, status: str, width: int) -> str:
    """`name` cut in the middle so that its chip text with `status` is at most `width` px wide
    (whole where it is already)."""
    over, name_width = _width(metrics, name, status) - width, metrics.horizontalAdvance(name)
    for extra in range(8):
        shown = _elided(metrics, name, Qt.TextElideMode.ElideMiddle, name_width - over - extra)
        if _width(metrics, shown, status) <= width:
            break
    return shown


def _elided(metrics: QFontMetrics, text: str, mode: Qt.TextElideMode, width: int) -> str:
    """`text` whole where it fits in `width` px (elidedText cuts a text exactly that wide), else cut."""
    return text if metrics.horizontalAdvance(text) <= width else metrics.elidedText(text, mode, max(width, 0))


def dropped_files(event) -> list[str]:
    """Local file paths a drag carries ([] for text or remote URLs)."""
    mime = event.mimeData()
    if not mime.hasUrls():
        return []
    return [url.toLocalFile() for url in mime.urls() if url.isLocalFile() and url.toLocalFile()]


class AttachmentBar(QWidget):
    """Attach button and chips. Signals:
        files_chosen(list[str]): files picked with Attach… or dropped.
        remove_requested(int id): the user removed this attachment's chip.
    """

    files_chosen = Signal(list)
    remove_requested = Signal(int)

    def __init__(self, parent=None, folders=None):
        """folders: the chat's FileFolders, where Attach… starts (None: the home folder)."""
        super().__init__(parent)
        self.setObjectName("attachmentBar")
        self._folders = folders
        self._editor: QWidget | None = None  # the message box (watch), where typing goes
        self.chips: dict[int, QToolButton] = {}
        self._labels: dict[int, tuple[str, str]] = {}  # (name, status) of each chip
        self.attach_button = QPushButton(self.tr("Attach…"))
        self.attach_button.setObjectName("attachButton")
        self.attach_button.setToolTip(self.tr("Attach text, Markdown, source code, PDF or DOCX files to the next "
                                              "message (or drop them onto the message box). A file that fits "
                                              "goes in whole; a larger one is searched for the parts that answer."))
        self._row = WrapRow(self, spacing=6, line_spacing=4)
        self._row.setContentsMargins(12, 4, 12, 0)
        self._row.add_widget(self.attach_button)
        # its height follows its width (the lines the chips take); never wider than the column
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._button_lent = False  # Attach… shown in another row (lend_attach_button)
        self.attach_button.clicked.connect(self._on_attach_clicked)
        self.setAcceptDrops(True)

    def watch(self, editor: QAbstractScrollArea) -> None:
        """Accept files dropped onto `editor` (the composer's message box) as attachments; plain
        text dropped there still goes into the text. The keyboard returns to `editor` after
        attaching."""
        self._editor = editor
        editor.viewport().setAcceptDrops(True)
        editor.viewport().installEventFilter(self)

    def lend_attach_button(self) -> QPushButton:
        """Attach… for another row to show (the composer's, beside the message box). This bar then
        holds only the chips and is hidden while there are none: the row of the button alone took
        ~30 px of a 640 x 420 window's transcript (trial 10). The button keeps working as here."""
        self._row.removeWidget(self.attach_button)
        self._button_lent = True
        self._show_when_needed()
        return self.attach_button

    def _show_when_needed(self) -> None:
        if self._button_lent:
            self.setVisible(bool(self.chips))

    def _return_keyboard(self) -> None:
        """Put the keyboard back in the message box (none watched: nothing to do)."""
        if self._editor is not None:
            self._editor.setFocus(Qt.FocusReason.OtherFocusReason)

    @Slot(int, str, str)
    def show_attachment(self, attachment_id: int, name: str, status: str) -> None:
        """Show, update or (status "") remove the chip of one attachment."""
        chip = self.chips.get(attachment_id)
        if not status:
            if chip is not None:
                self.chips.pop(attachment_id)
                self._labels.pop(attachment_id, None)
                if chip.hasFocus():  # else the keyboard would be left on a deleted widget
                    self._return_keyboard()
                # out of the row now: until deleted it took room from the chips left (trial 11:
                # six files refused, the other four chips left without their counts)
                self._row.removeWidget(chip)
                chip.hide()
                chip.deleteLater()
                self._show_when_needed()
                self._fit_chips()
            return
        self._labels[attachment_id] = (name, status)
        if chip is None:
            chip = self.chips[attachment_id] = QToolButton()
            chip.setText(_chip_text(name, status))
            chip.setObjectName("attachmentChip")
            chip.setAccessibleName(self.tr("Attachment {0}").format(name))
            chip.clicked.connect(lambda: self.remove_requested.emit(attachment_id))
            self._row.add_widget(chip)
            self._show_when_needed()
        # a narrow bar shortens the chip's name: the tooltip says it whole (new-user trial)
        chip.setToolTip(f"{name} · {status}\n" + self.tr("Remove this attachment"))
        self._fit_chips()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        self._fit_chips()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().showEvent(event)
        self._fit_chips()  # shown at the width it had: no resize to fit them by

    def _fit_chips(self) -> None:
        """Each chip's text for the bar's width: whole where the chip fits on a line of its own
        (the row puts it on the next line when the one it would end is full); a chip wider than a
        line is shortened to it (_fitted: the name in the middle, the status whole or not at all).
        Unshown, whole."""
        margins = self._row.contentsMargins()
        line = self.width() - margins.left() - margins.right()
        for key, chip in self.chips.items():
            chip.ensurePolished()  # the stylesheet's font and padding
            metrics = chip.fontMetrics()
            name, status = whole = self._labels[key]
            chrome = chip.sizeHint().width() - metrics.horizontalAdvance(_shown(chip.text()))
            if self.isVisible() and chrome + _width(metrics, *whole) > line:
                name, status = _fitted(metrics, name, status, line - chrome)
            if chip.text() != (text := _chip_text(name, status)):
                chip.setText(text)

    # ----- drops -------------------------------------------------------------------------------
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt override)
        if event.type() in (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop):
            files = dropped_files(event)
            if files:
                event.acceptProposedAction()
                if event.type() == QEvent.Type.Drop:
                    self.files_chosen.emit(files)
                    self._return_keyboard()
                return True
        return super().eventFilter(watched, event)

    def dragEnterEvent(self, event) -> None:  # noqa: N802 (Qt override)
        if dropped_files(event):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802 (Qt override)
        files = dropped_files(event)
        if files:
            event.acceptProposedAction()
            self.files_chosen.emit(files)
            self._return_keyboard()

    @Slot()
    def _on_attach_clicked(self) -> None:
        paths = open_paths(self, self._folders, ATTACH, self.tr("Attach files to the next message"),
                           self.tr("Documents (*.txt *.md *.pdf *.docx *.py *.json *.csv "
                                   "*.log *.html *.xml *.yaml *.yml *.toml);;All files (*)"))
        if paths:
            self.files_chosen.emit(paths)
        self._return_keyboard()
