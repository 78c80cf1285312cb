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
from PySide6.QtWidgets import QFileDialog, QFileSystemModel, QTreeView, QWidget

SIZE_COLUMN, DATE_COLUMN = 1, 3  # QFileSystemModel's Name, Size, Type, Date Modified


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
    gets the proxy when it draws Qt's own list (it has a QFileSystemModel then), and its columns
    are widened as it shows (Qt restores their English widths between the two)."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ChildPolished:
            dialog = event.child()
            if (isinstance(dialog, QFileDialog) and dialog.findChild(QFileSystemModel) is not None
                    and not isinstance(dialog.proxyModel(), WindowLocaleFileModel)):
                dialog.setProxyModel(WindowLocaleFileModel(dialog))
                dialog.installEventFilter(self)  # its columns are widened once Qt has sized them
        elif event.type() == QEvent.Type.Show and isinstance(watched, QFileDialog):
            watched.removeEventFilter(self)
            widen_columns(watched)
        return False


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
