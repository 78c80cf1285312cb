"""Qt's own file dialog writing sizes and dates in the window's language.

QFileSystemModel (the list inside Qt's non-native QFileDialog) writes a file's size and date
with QLocale::system() (Qt 6: QFileSystemModelPrivate::size returns
QLocale::system().formattedDataSize(bytes)), not through a translation, so a window switched to
Korean in Settings on an English or C system said "118 bytes" where Korean says "118 바이트". The
Type column's words are translations and come from Headroom's catalogue instead
(app.ui.translations.file_type_names). QLocale::system() cannot be changed once Qt has read it,
so the dialogs Headroom opens get a proxy model that writes these two columns with the default
QLocale (the window's language, set by app.ui.translations.install_translators). Native dialogs
(Windows, macOS, the GTK and KDE portals) draw their own lists and are left alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtCore import QDate, QDateTime, QEvent, QIdentityProxyModel, QLocale, QModelIndex, QObject, Qt, QTime
from PySide6.QtWidgets import QFileDialog, QFileSystemModel, QListView, QSplitter, QTreeView, QWidget

SIZE_COLUMN, TYPE_COLUMN, DATE_COLUMN = 1, 2, 3  # QFileSystemModel's Name, Size, Type, Date Modified


class WindowLocaleFileModel(QIdentityProxyModel):
    """A QFileSystemModel as it is, but a file's size ("118 바이트", "4.88 KiB") and date written
    with the default QLocale; a folder's size stays empty, as Qt leaves it."""

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and index.column() in (SIZE_COLUMN, DATE_COLUMN):
            files: QFileSystemModel = self.sourceModel()
            at = self.mapToSource(index)
            if index.column() == DATE_COLUMN:
                return QLocale().toString(files.lastModified(at), QLocale.FormatType.ShortFormat)
            if not files.isDir(at):
                return QLocale().formattedDataSize(files.size(at))
        return super().data(index, role)


class _DialogWatcher(QObject):
    """An event filter on a file dialog's parent: the dialog, polished just before it shows,
    gets the proxy when it draws Qt's own list (it has a QFileSystemModel then); as it shows it
    is made roomy and its columns are widened (Qt restores their English widths between the
    two), and again to their contents each time a folder's rows, or their details, have loaded."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ChildPolished:
            dialog = event.child()
            if (isinstance(dialog, QFileDialog) and dialog.findChild(QFileSystemModel) is not None
                    and not isinstance(dialog.proxyModel(), WindowLocaleFileModel)):
                dialog.setProxyModel(WindowLocaleFileModel(dialog))
                dialog.installEventFilter(self)  # its columns are widened once Qt has sized them
        elif event.type() == QEvent.Type.Show and isinstance(watched, QFileDialog):
            watched.removeEventFilter(self)
            open_roomy(watched)  # before QDialog::showEvent, which centres it on its parent
            widen_columns(watched)
            files, dialog = watched.findChild(QFileSystemModel), watched
            files.directoryLoaded.connect(lambda _path: fit_columns(dialog))  # the rows load in a thread
            # and their types and dates after them (Qt's file info gatherer, another thread): on a
            # busy machine they came after directoryLoaded and the Date column stayed cut (CI)
            files.dataChanged.connect(lambda *_: fit_columns(dialog))
        return False


MIN_DIALOG_SIZE = (800, 500)  # px
PARENT_FRACTION = 0.7  # of the window the dialog belongs to
MIN_NAME_WIDTH = 200  # px: the Name column's share when the list is narrow


def open_roomy(dialog: QFileDialog) -> None:
    """Qt's own dialog opens about 600×400 px, which cut its Type column ("일···서", "pla···ent")
    and the date (a trial): it is made at least MIN_DIALOG_SIZE and PARENT_FRACTION of its
    window, within the screen; never smaller than it is."""
    parent = dialog.parentWidget()
    width, height = MIN_DIALOG_SIZE
    if parent is not None:
        width = max(width, round(parent.window().width() * PARENT_FRACTION))
        height = max(height, round(parent.window().height() * PARENT_FRACTION))
    if dialog.screen() is not None:
        room = dialog.screen().availableGeometry()
        width, height = min(width, room.width()), min(height, room.height())
    dialog.resize(max(dialog.width(), width), max(dialog.height(), height))


def fit_columns(dialog: QFileDialog) -> None:
    """The Type and Date columns as wide as their widest shown text (never narrower than they
    are), the Name column given what is left of the list's width (at least MIN_NAME_WIDTH, so
    the Date column is not pushed out of view by a wide restored Name), and the places on the
    left as wide as their names."""
    tree = dialog.findChild(QTreeView, "treeView")
    if tree is None:
        return
    # the places first: widening them narrows the list, whose width the Name column is cut to
    # below (the other way round, a fit that widened the places left the Date column past the
    # list's right edge until the next fit; on a busy machine there was none: CI, 2026-12-03)
    places, splitter = dialog.findChild(QListView, "sidebar"), dialog.findChild(QSplitter, "splitter")
    if places is not None and splitter is not None and splitter.count() == 2:
        wide = places.sizeHintForColumn(0) + places.frameWidth() * 2 + places.verticalScrollBar().sizeHint().width()
        sizes = splitter.sizes()
        if wide > sizes[0] and sum(sizes) > wide + MIN_NAME_WIDTH * 2:
            splitter.setSizes([wide, sum(sizes) - wide])
    header = tree.header()
    for column in (TYPE_COLUMN, DATE_COLUMN):
        wide = max(tree.sizeHintForColumn(column), header.sectionSizeHint(column))
        header.resizeSection(column, max(header.sectionSize(column), wide))
    others = sum(header.sectionSize(c) for c in range(1, header.count()) if not header.isSectionHidden(c))
    header.resizeSection(0, max(MIN_NAME_WIDTH, tree.viewport().width() - others))


def widen_columns(dialog: QFileDialog) -> None:
    """Qt sizes the Size and Date columns for English samples ("128.88 GB", "10/29/81
    02:02PM"), then restores the widths the last file dialog closed with; "93.46 MiB" was cut to
    "93.…MiB" (trial 5) and Korean ones are wider still ("1023 바이트", "81. 10. 29. 오후 12:02").
    Each column gets at least its widest sample in the window's language, in the list's font."""
    tree = dialog.findChild(QTreeView, "treeView")
    if tree is None:
        return
    locale, metrics, header = QLocale(), tree.fontMetrics(), tree.header()
    pad = metrics.horizontalAdvance("MM")  # the cell's margins either side of the text
    sizes = (locale.formattedDataSize(1023), locale.formattedDataSize(int(128.88 * (1 << 30))))
    dates = (QDateTime(QDate(2081, 10, 29), QTime(12, 2)), QDateTime(QDate(2081, 10, 29), QTime(2, 2)))
    for column, samples in ((SIZE_COLUMN, sizes),
                            (DATE_COLUMN, [locale.toString(d, QLocale.FormatType.ShortFormat) for d in dates])):
        wide = max(metrics.horizontalAdvance(s) for s in samples) + pad
        header.resizeSection(column, max(header.sectionSize(column), wide))


@contextmanager
def file_dialogs_in_window_language(parent: QWidget) -> Iterator[None]:
    """While the block runs, a file dialog opened with `parent` (QFileDialog's static
    functions) writes sizes and dates in the window's language."""
    watcher = _DialogWatcher(parent)
    parent.installEventFilter(watcher)
    try:
        yield
    finally:
        parent.removeEventFilter(watcher)
        watcher.deleteLater()
