"""The row above the composer: "Attach…", and one chip per file attached to the next message
("report.pdf · reading 40%", "report.pdf · 12,345 characters, 3 pages"), each removable. Files
dropped onto the composer (or onto this row) are attached too.

After Attach… (files chosen or not), a drop, or removing the chip that had the keyboard, the
keyboard goes back to the message box: left on the button, the next Space would open the file
dialog again instead of typing a space.

Chips too wide for the bar side by side shorten the longest file names in the middle and keep
their status whole ("a-long-re…rt.pdf · 12,345 characters, 3 pages  ✕"); Qt's own cut fell in the
status ("cp949.txt · 44 ...cters, cp949", new-user trial 10). The tooltip says it all."""

from PySide6.QtCore import QEvent, QObject, Qt, Signal, Slot
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QAbstractScrollArea, QHBoxLayout, QPushButton, QToolButton, QWidget

from app.core.last_folders import ATTACH
from app.ui.elided_label import MIN_CHARS
from app.ui.file_pickers import open_paths


def _shown(text: str) -> str:
    """A button's text as drawn ("&&" is one "&"; an access key's "&" is not in these)."""
    return text.replace("&&", "&")


def _chip_text(name: str, status: str) -> str:
    name = name.replace("&", "&&")  # "&" in a file name is no access key
    return f"{name} · {status}  ✕" if status else f"{name}  ✕"  # (no status: a chip squeezed to its name)


def _fitted(metrics: QFontMetrics, name: str, status: str, width: int) -> tuple[str, str]:
    """`name` and `status` shortened (_shortened) for a chip text at most `width` px wide, as
    measured whole: a text is not quite as wide as its parts (kerning, rounding)."""
    over = metrics.horizontalAdvance(_shown(_chip_text(name, status))) - width
    for extra in range(8):
        shown = _shortened(metrics, name, status, over + extra)
        if metrics.horizontalAdvance(_shown(_chip_text(*shown))) <= width:
            break
    return shown


def _shortened(metrics: QFontMetrics, name: str, status: str, over: int) -> tuple[str, str]:
    """`name` and `status` drawn `over` px narrower: the name cut in the middle; where that would
    leave it less than a few characters (MIN_CHARS), those, and the status cut at its end."""
    name_width, status_width = metrics.horizontalAdvance(name), metrics.horizontalAdvance(status)
    floor = min(name_width, metrics.horizontalAdvance(MIN_CHARS))
    if name_width - over < floor:
        status = _elided(metrics, status, Qt.TextElideMode.ElideRight, status_width - (over - (name_width - floor)))
        over = name_width - floor
    return _elided(metrics, name, Qt.TextElideMode.ElideMiddle, name_width - over), status


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
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(12, 4, 12, 0)
        self._row.addWidget(self.attach_button)
        self._row.addStretch(1)
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
                chip.deleteLater()
                self._show_when_needed()
            return
        self._labels[attachment_id] = (name, status)
        if chip is None:
            chip = self.chips[attachment_id] = QToolButton()
            chip.setText(_chip_text(name, status))
            chip.setObjectName("attachmentChip")
            chip.setAccessibleName(self.tr("Attachment {0}").format(name))
            chip.clicked.connect(lambda: self.remove_requested.emit(attachment_id))
            self._row.insertWidget(self._row.count() - 1, chip)
            self._show_when_needed()
        # a narrow bar shortens the chip's name: the tooltip says it whole (new-user trial)
        chip.setToolTip(f"{name} · {status}\n" + self.tr("Remove this attachment"))
        self._fit_chips()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        self._fit_chips()

    def _fit_chips(self) -> None:
        """Each chip's text for the bar's width: whole while the chips fit side by side; else
        the room is shared (a chip that needs less than an equal share keeps its whole text) and
        a chip over its share shortens its name in the middle, its status whole. Unshown, whole."""
        if not self.chips:
            return
        needed, widths, metrics = {}, {}, {}  # px: the chip with its whole text, that text
        for key, chip in self.chips.items():
            chip.ensurePolished()  # the stylesheet's font and padding
            metrics[key] = chip.fontMetrics()
            chrome = chip.sizeHint().width() - metrics[key].horizontalAdvance(_shown(chip.text()))
            widths[key] = metrics[key].horizontalAdvance(_shown(_chip_text(*self._labels[key])))
            needed[key] = chrome + widths[key]
        shares = dict(needed)
        margins = self._row.contentsMargins()
        others = [w for w in (self._row.itemAt(i).widget() for i in range(self._row.count()))
                  if w is not None and not w.isHidden() and w not in self.chips.values()]  # Attach…, unless lent
        room = (self.width() - margins.left() - margins.right() - sum(w.sizeHint().width() for w in others)
                - self._row.spacing() * (len(needed) + len(others) - 1))
        if self.isVisible() and sum(needed.values()) > room:
            for count, key in enumerate(sorted(needed, key=needed.get)):  # the narrowest first
                shares[key] = min(needed[key], max(room // (len(needed) - count), 0))
                room -= shares[key]
        for key, chip in self.chips.items():
            name, status = self._labels[key]
            if shares[key] < needed[key]:
                name, status = _fitted(metrics[key], name, status, shares[key] - (needed[key] - widths[key]))
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
