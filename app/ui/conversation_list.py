"""The conversations sidebar (issue 4 item 4): New chat, search, the list grouped by last use
(Today, Yesterday, Previous 7 days, …), inline rename, a context menu (rename, export, delete)
and an Undo bar shown for `UNDO_MS` after a delete; it waits while the pointer or the keyboard
focus is on it (trial 8: at 8 s a user who reacted a bit late lost the chat).

The widget only asks: every change goes out as a `*_requested` signal, and the window answers
with `set_conversations` (and `show_undo` once a delete is done).

The rows never move under the pointer (product trial: a click landed on the chat that had just
moved there): while the pointer is over the list, a refresh that shows the same conversations
updates their titles and the selection in place and keeps their order; the new order is shown
when the pointer leaves. A refresh that adds or drops rows (a first message sent, a delete, an
undo, a search) is the user's own doing and shows at once. The scroll position is kept.
"""

import time
from collections.abc import Sequence
from datetime import date, datetime

from PySide6.QtCore import (
    QCoreApplication,
    QEvent,
    QItemSelectionModel,
    QLocale,
    QModelIndex,
    QObject,
    QPoint,
    QSize,
    Qt,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtGui import QAction, QKeySequence, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QStyledItemDelegate,
    QVBoxLayout,
    QWidget,
)

from app.chat.conversations import MAX_TITLE_CHARS, clean_title
from app.core.store import ConversationInfo
from app.ui.edit_keys import widget_shortcut
from app.ui.plain_text import plain_tooltip

SEARCH_DEBOUNCE_MS = 200
UNDO_MS = 10_000  # how long Undo is offered after a delete (Gmail's toast: about 10 s)
UNDO_AFTER_HOVER_MS = 4000  # at least this long again once the pointer or focus leaves the bar
EXPORT_MARKDOWN = "markdown"
EXPORT_JSON = "json"
ID_ROLE = Qt.ItemDataRole.UserRole
TITLE_ROLE = Qt.ItemDataRole.UserRole + 1


def untitled() -> str:
    """What an untitled conversation is called in the list."""
    return QCoreApplication.translate("ConversationList", "New chat")


def display_title(title: str) -> str:
    """`title` as every title is shown: cleaned as a new or renamed one is (clean_title: one line,
    no control or bidi characters); untitled() when nothing visible is left. A title stored before
    that cleaning, or copied from one, showed its invisible characters in the list."""
    return clean_title(title) or untitled()


def age_group(timestamp: float, now: float) -> str:
    """The sidebar section of a conversation last updated at `timestamp` (Unix seconds, local
    calendar days): Today, Yesterday, Previous 7 days, Previous 30 days, else the month and
    year in the window's language ("March 2024", "2024년 3월")."""
    day = date.fromtimestamp(timestamp)
    days = (date.fromtimestamp(now) - day).days
    if days <= 0:
        return QCoreApplication.translate("ConversationList", "Today")
    if days == 1:
        return QCoreApplication.translate("ConversationList", "Yesterday")
    if days < 7:
        return QCoreApplication.translate("ConversationList", "Previous 7 days")
    if days < 30:
        return QCoreApplication.translate("ConversationList", "Previous 30 days")
    month = QLocale().standaloneMonthName(day.month)
    return QCoreApplication.translate("ConversationList", "{0} {1}", "month name, year").format(month, day.year)


class _TitleDelegate(QStyledItemDelegate):
    """Inline rename edits the stored title (blank for an untitled chat), not the shown text, at
    most MAX_TITLE_CHARS long."""

    def createEditor(self, parent, option, index: QModelIndex):  # noqa: N802 (Qt override)
        editor = super().createEditor(parent, option, index)
        if hasattr(editor, "setMaxLength"):
            editor.setMaxLength(MAX_TITLE_CHARS)
        return editor

    def setEditorData(self, editor, index: QModelIndex) -> None:
        editor.setText(index.data(TITLE_ROLE) or "")
        editor.selectAll()


class _UndoLabel(QLabel):
    """'Deleted “title”' with the title elided to the width, quotes kept (text() is unelided)."""

    def set_title(self, title: str) -> None:
        self._title = title
        self.setText(self._template().format(title))
        self.setToolTip(plain_tooltip(title))

    def minimumSizeHint(self) -> QSize:
        return QSize(40, super().minimumSizeHint().height())

    def paintEvent(self, _event) -> None:
        metrics = self.fontMetrics()
        rect = self.contentsRect()
        template = self._template()
        room = rect.width() - metrics.horizontalAdvance(template.format(""))
        title = metrics.elidedText(getattr(self, "_title", ""), Qt.TextElideMode.ElideRight, max(0, room))
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(rect, int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                         template.format(title))

    def _template(self) -> str:
        return self.tr("Deleted “{0}”")


class ConversationList(QWidget):
    """Sidebar of saved conversations.

    Signals: open_requested(int id) — the user picked another conversation; new_requested();
    rename_requested(int id, str title) — stripped, never empty; delete_requested(int id);
    restore_requested(int id) — Undo clicked while offered (see `show_undo`);
    undo_ended(int id) — the offer of Undo for `id` ended without it: ran out, or a newer delete
    replaced it (the deleted chat's last resources may go now);
    search_changed(str text) — stripped, SEARCH_DEBOUNCE_MS after the last keystroke;
    export_requested(int id, str fmt) — fmt is EXPORT_MARKDOWN or EXPORT_JSON;
    clicked() — a conversation's row was clicked (after its open_requested): the user is done
    with the list and the window gives the keyboard to the message box, as chat apps do. Rows
    picked with the keyboard (arrows, then Enter) keep it here.
    """

    open_requested = Signal(int)
    new_requested = Signal()
    rename_requested = Signal(int, str)
    delete_requested = Signal(int)
    restore_requested = Signal(int)
    undo_ended = Signal(int)
    search_changed = Signal(str)
    export_requested = Signal(int, str)
    clicked = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("conversationList")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setMinimumWidth(200)
        self._current_id: int | None = None
        self._undo_id: int | None = None
        self._last_search = ""
        self._hovered = False  # the pointer is over the list: rows keep their places
        self._deferred: tuple | None = None  # set_conversations' arguments, shown when it leaves
        self._cursor_row: int | None = None  # the row a keyboard delete left: the cursor stays there
        self._cursor_id: int | None = None  # a conversation brought back by Undo: the cursor goes to it
        self._shown: tuple | None = None  # (infos, their age groups) the rows show, while they do
        self.new_button = QPushButton("+  " + untitled())
        self.new_button.setObjectName("newChatButton")
        self.new_button.setToolTip(self.tr("Start a new conversation (Ctrl+N)"))
        self.search_edit = QLineEdit()
        self.search_edit.setObjectName("conversationSearch")
        self.search_edit.setPlaceholderText(self.tr("Search conversations"))
        self.search_edit.setClearButtonEnabled(True)
        self.list_widget = QListWidget()
        self.list_widget.setObjectName("conversationItems")
        self.list_widget.setItemDelegate(_TitleDelegate(self.list_widget))
        self.list_widget.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed)
        self.list_widget.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list_widget.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list_widget.setUniformItemSizes(False)
        self.list_widget.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.empty_label = QLabel()
        self.empty_label.setObjectName("conversationListEmpty")
        self.empty_label.setTextFormat(Qt.TextFormat.PlainText)  # the search as typed
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.empty_label.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 10, 8, 8)
        layout.setSpacing(8)
        layout.addWidget(self.new_button)
        layout.addWidget(self.search_edit)
        layout.addWidget(self.list_widget, 1)
        layout.addWidget(self.empty_label, 1)
        layout.addWidget(self._build_undo_bar())
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DEBOUNCE_MS)
        self._undo_timer = QTimer(self)
        self._undo_timer.setSingleShot(True)
        self.new_button.clicked.connect(self.new_requested)
        self.search_edit.textChanged.connect(self._on_search_text_changed)
        self._search_timer.timeout.connect(self._on_search_timer_timeout)
        self._undo_timer.timeout.connect(self._on_undo_timeout)
        self._undo_held = False  # the pointer or the keyboard focus is on the Undo bar
        self._undo_left_ms = 0  # what was left of the offer when it was held
        self.undo_button.clicked.connect(self._on_undo_clicked)
        self.list_widget.itemClicked.connect(self._on_item_clicked_with_pointer)
        self.list_widget.itemActivated.connect(self._on_item_clicked)
        self.list_widget.itemChanged.connect(self._on_item_changed)
        self.list_widget.customContextMenuRequested.connect(self._on_context_menu_requested)
        self.list_widget.installEventFilter(self)
        widget_shortcut(QKeySequence(QKeySequence.StandardKey.Delete), self.list_widget,
                        self._on_delete_key_pressed)
        # Ctrl+Z in the list takes back the delete on offer (trial 6: only the bar's button did)
        widget_shortcut(QKeySequence(QKeySequence.StandardKey.Undo), self.list_widget, self._on_undo_clicked)
        widget_shortcut(QKeySequence(Qt.Key.Key_Escape), self.search_edit, self.search_edit.clear)
        # from the search box to its results by keyboard: Down goes to them, Enter opens the first
        # (trial 4: only Tab reached them); the Menu key and Shift+F10 open a row's menu
        widget_shortcut(QKeySequence(Qt.Key.Key_Down), self.search_edit, self._focus_first_result)
        for enter in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            widget_shortcut(QKeySequence(enter), self.search_edit, self._open_first_result)
        for menu_key in (QKeySequence(Qt.Key.Key_Menu), QKeySequence("Shift+F10")):
            widget_shortcut(menu_key, self.list_widget, self._open_current_menu)
        self.set_conversations([], None)

    def _build_undo_bar(self) -> QFrame:
        self.undo_bar = QFrame()
        self.undo_bar.setObjectName("undoBar")
        self.undo_label = _UndoLabel()
        self.undo_label.setObjectName("undoLabel")
        self.undo_button = QPushButton(self.tr("Undo"))
        self.undo_button.setObjectName("undoButton")
        self.undo_button.setCursor(Qt.CursorShape.PointingHandCursor)
        row = QHBoxLayout(self.undo_bar)
        row.setContentsMargins(10, 6, 6, 6)
        row.addWidget(self.undo_label, 1)
        row.addWidget(self.undo_button)
        self.undo_bar.setVisible(False)
        self.undo_bar.installEventFilter(self)
        self.undo_button.installEventFilter(self)
        return self.undo_bar

    # ----- slots in ------------------------------------------------------------------------
    @Slot(list, object)
    def set_conversations(self, infos: Sequence[ConversationInfo], current_id: int | None,
                          now: float | None = None) -> None:
        """Show `infos` (newest first, as `Store.list_conversations` returns them) under age
        headings relative to `now` (Unix seconds; default: the clock) and select `current_id`.
        While the pointer is over the list and the conversations are the same ones, only their
        titles and the selection change now; their new order shows when the pointer leaves."""
        now = time.time() if now is None else now
        self._current_id = current_id
        if self._hovered and {info.id for info in infos} == set(self.ids()):
            self._deferred = (list(infos), current_id, now)
            self._update_in_place(infos, current_id)
            self._shown = None
            return
        self._deferred = None
        shown = (tuple(infos), tuple(age_group(info.updated_at, now) for info in infos))
        if shown == self._shown:  # the same rows (opening a chat): only the selection moves
            self._select(current_id)  # 2,000 chats: 0.2 s of rebuilding saved on every open
            self._update_empty_state(bool(infos))  # "No conversations match …" names this search
            return
        self._shown = shown
        scrolled = self.list_widget.verticalScrollBar().value()
        self.list_widget.blockSignals(True)
        self.list_widget.clear()
        group = None
        for info in infos:
            if age_group(info.updated_at, now) != group:
                group = age_group(info.updated_at, now)
                self.list_widget.addItem(self._header_item(group))
            item = self._conversation_item(info)
            self.list_widget.addItem(item)
            if info.id == current_id:
                self.list_widget.setCurrentItem(item)
        if current_id is None or current_id not in self.ids():
            self.list_widget.setCurrentItem(None)
            self.list_widget.clearSelection()
        self._keep_cursor()
        self._cursor_row = self._cursor_id = None
        self.list_widget.blockSignals(False)
        self._update_empty_state(bool(infos))
        self.list_widget.doItemsLayout()  # the scroll range of the new rows, to scroll back into
        self.list_widget.verticalScrollBar().setValue(scrolled)

    def _keep_cursor(self) -> None:
        """After a keyboard delete or its Undo: the keyboard cursor on the conversation brought
        back, else on the one now at the deleted one's row (else the last). The open chat stays
        the selected one, so F2, Delete and the arrows go on from the cursor, not from the open
        chat (trial 6: nothing was current after Delete; trial 7: with another chat open, the
        cursor jumped to it and F2 renamed it)."""
        rows = [r for r in range(self.list_widget.count()) if self.list_widget.item(r).data(ID_ROLE) is not None]
        row = next((r for r in rows if self.list_widget.item(r).data(ID_ROLE) == self._cursor_id), None)
        if row is None and self._cursor_row is not None:
            row = next((r for r in rows if r >= self._cursor_row), rows[-1] if rows else None)
        if row is not None:
            self.list_widget.setCurrentItem(self.list_widget.item(row), QItemSelectionModel.SelectionFlag.NoUpdate)

    def _update_in_place(self, infos: Sequence[ConversationInfo], current_id: int | None) -> None:
        """New titles and tooltips on the rows shown, in their present order; `current_id` selected."""
        for info in infos:
            self._dress_item(self.item_for(info.id), info)
        self._select(current_id)

    def _select(self, current_id: int | None) -> None:
        """Select the row of `current_id` (none: no row), without item signals."""
        self.list_widget.blockSignals(True)
        current = self.item_for(current_id) if current_id is not None else None
        self.list_widget.setCurrentItem(current)
        if current is None:
            self.list_widget.clearSelection()
        self.list_widget.blockSignals(False)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Track the pointer over the list; when it leaves, show the order held back meanwhile.
        The Undo bar's offer waits while the pointer is on it or its button has the focus."""
        if watched in (self.undo_bar, self.undo_button):
            self._track_undo_hold(watched, event.type())
        elif watched is self.list_widget and event.type() == QEvent.Type.Enter:
            self._hovered = True
        elif watched is self.list_widget and event.type() == QEvent.Type.Leave:
            self._hovered = False
            if self._deferred is not None:
                self.set_conversations(*self._deferred)
        return super().eventFilter(watched, event)

    def _track_undo_hold(self, watched: QObject, kind: QEvent.Type) -> None:
        if watched is self.undo_bar and kind == QEvent.Type.Enter:
            self._hold_undo(True)
        elif watched is self.undo_bar and kind == QEvent.Type.Leave:
            self._hold_undo(self.undo_button.hasFocus())
        elif watched is self.undo_button and kind == QEvent.Type.FocusIn:
            self._hold_undo(True)
        elif watched is self.undo_button and kind == QEvent.Type.FocusOut:
            self._hold_undo(self.undo_bar.underMouse())

    def _hold_undo(self, held: bool) -> None:
        """Pause the offer's clock while held; let it run on, UNDO_AFTER_HOVER_MS at least, after."""
        if held == self._undo_held:
            return
        self._undo_held = held
        if self._undo_id is None:
            return
        if held:
            self._undo_left_ms = self._undo_timer.remainingTime()
            self._undo_timer.stop()
        else:
            self._undo_timer.start(max(self._undo_left_ms, UNDO_AFTER_HOVER_MS))

    @Slot(int, str)
    def show_undo(self, conversation_id: int, title: str) -> None:
        """Offer Undo for the deleted `conversation_id` for UNDO_MS, longer while the pointer or
        the focus is on it; a newer delete replaces the offer (undo_ended for the older one)."""
        replaced = self._undo_id
        self._undo_id = conversation_id
        self.undo_label.set_title(display_title(title))
        self.undo_bar.setVisible(True)
        self._undo_left_ms = UNDO_MS
        if not self._undo_held:
            self._undo_timer.start(UNDO_MS)
        if replaced is not None and replaced != conversation_id:
            self.undo_ended.emit(replaced)

    @Slot()
    def hide_undo(self) -> None:
        """Withdraw the offer (no undo_ended: see `_on_undo_timeout`)."""
        self._undo_timer.stop()
        self.undo_bar.setVisible(False)
        self._undo_id = None
        self._undo_held = False  # hidden: no Leave may come (Qt sends one on hide, tests do not)

    @Slot()
    def _on_undo_timeout(self) -> None:
        ended = self._undo_id
        self.hide_undo()
        if ended is not None:
            self.undo_ended.emit(ended)

    # ----- reading -------------------------------------------------------------------------
    def ids(self) -> list[int]:
        """Conversation ids in display order (headings skipped)."""
        return [i for i in (self.list_widget.item(r).data(ID_ROLE) for r in range(self.list_widget.count()))
                if i is not None]

    def headings(self) -> list[str]:
        return [item.text() for item in self._items() if item.data(ID_ROLE) is None]

    def item_for(self, conversation_id: int) -> QListWidgetItem | None:
        return next((i for i in self._items() if i.data(ID_ROLE) == conversation_id), None)

    def current_id(self) -> int | None:
        return self._current_id

    def begin_rename(self, conversation_id: int) -> None:
        """Open the inline title editor on `conversation_id`."""
        item = self.item_for(conversation_id)
        if item is not None:
            self.list_widget.scrollToItem(item)
            self.list_widget.editItem(item)

    def context_menu(self, conversation_id: int) -> QMenu:
        """The menu shown on right click (built fresh; its actions emit the signals)."""
        menu = QMenu(self)
        menu.setObjectName("conversationMenu")
        for text, command in ((self.tr("Rename"), "rename"), (self.tr("Export as Markdown…"), EXPORT_MARKDOWN),
                              (self.tr("Export as JSON…"), EXPORT_JSON), (None, None),
                              (self.tr("Delete"), "delete")):
            if text is None:
                menu.addSeparator()
                continue
            action = menu.addAction(text)
            action.setObjectName(f"{command}Action")
            action.setData((conversation_id, command))
        menu.triggered.connect(self._on_menu_triggered)
        return menu

    # ----- internals -----------------------------------------------------------------------
    def _items(self) -> list[QListWidgetItem]:
        return [self.list_widget.item(r) for r in range(self.list_widget.count())]

    def _header_item(self, text: str) -> QListWidgetItem:
        item = QListWidgetItem(text)
        item.setFlags(Qt.ItemFlag.NoItemFlags)
        font = item.font()
        font.setPointSizeF(max(7.0, font.pointSizeF() - 1.5))
        font.setBold(True)
        item.setFont(font)
        item.setData(Qt.ItemDataRole.ForegroundRole, self.palette().placeholderText())
        return item

    def _conversation_item(self, info: ConversationInfo) -> QListWidgetItem:
        item = QListWidgetItem()
        item.setData(ID_ROLE, info.id)
        item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
                      | Qt.ItemFlag.ItemIsEditable)
        self._dress_item(item, info)
        return item

    def _dress_item(self, item: QListWidgetItem, info: ConversationInfo) -> None:
        """`item` shows `info`: its title (italic when untitled), a tooltip with count and last use."""
        item.setText(display_title(info.title))
        item.setData(TITLE_ROLE, info.title)
        updated = QLocale().toString(datetime.fromtimestamp(info.updated_at), QLocale.FormatType.ShortFormat)
        item.setToolTip(plain_tooltip("\n".join((display_title(info.title),
                                   self.tr("%n messages · last used {0}", "", info.message_count).format(updated),
                                   self.tr("F2 to rename · right-click for more")))))
        font = item.font()
        font.setItalic(not clean_title(info.title))  # as untitled() is shown
        item.setFont(font)

    def _update_empty_state(self, has_rows: bool) -> None:
        search = self.search_edit.text().strip()
        self.empty_label.setText(self.tr("No conversations match “{0}”.").format(search) if search
                                 else self.tr("No conversations yet.\nYour chats are saved here."))
        self.empty_label.setVisible(not has_rows)
        self.list_widget.setVisible(has_rows)

    @Slot(QListWidgetItem)
    def _on_item_clicked(self, item: QListWidgetItem) -> None:
        conversation_id = item.data(ID_ROLE)
        if conversation_id is not None and conversation_id != self._current_id:
            self._current_id = conversation_id
            self.open_requested.emit(conversation_id)

    @Slot(QListWidgetItem)
    def _on_item_clicked_with_pointer(self, item: QListWidgetItem) -> None:
        row = item.data(ID_ROLE) is not None  # read first: opening it may rebuild the rows
        self._on_item_clicked(item)
        if row:
            self.clicked.emit()

    @Slot(QListWidgetItem)
    def _on_item_changed(self, item: QListWidgetItem) -> None:
        conversation_id = item.data(ID_ROLE)
        if conversation_id is None:
            return
        new_title = " ".join(item.text().split())
        old_title = item.data(TITLE_ROLE) or ""
        self._shown = None  # the row is edited here: the next list is drawn anew, whatever it holds
        self.list_widget.blockSignals(True)
        if new_title and new_title != old_title:
            item.setData(TITLE_ROLE, new_title)
            item.setText(new_title)
            font = item.font()
            font.setItalic(False)
            item.setFont(font)
        else:
            item.setText(display_title(old_title))  # blank or unchanged: keep the old title
        self.list_widget.blockSignals(False)
        if new_title and new_title != old_title:
            self.rename_requested.emit(conversation_id, new_title)

    @Slot(QAction)
    def _on_menu_triggered(self, action: QAction) -> None:
        conversation_id, command = action.data()
        if command == "rename":
            self.begin_rename(conversation_id)
        elif command == "delete":
            self.delete_requested.emit(conversation_id)
        else:
            self.export_requested.emit(conversation_id, command)

    @Slot(QPoint)
    def _on_context_menu_requested(self, pos: QPoint) -> None:
        item = self.list_widget.itemAt(pos)
        if item is None or item.data(ID_ROLE) is None:
            return
        self.context_menu(item.data(ID_ROLE)).exec(self.list_widget.viewport().mapToGlobal(pos))

    def _first_result(self) -> QListWidgetItem | None:
        return next((item for item in self._items() if item.data(ID_ROLE) is not None), None)

    @Slot()
    def _focus_first_result(self) -> None:
        first = self._first_result()
        if first is None:
            return
        if self.list_widget.currentItem() is None or self.list_widget.currentItem().data(ID_ROLE) is None:
            self.list_widget.setCurrentItem(first)
        self.list_widget.setFocus(Qt.FocusReason.ShortcutFocusReason)

    @Slot()
    def _open_first_result(self) -> None:
        self._search_timer.stop()
        self._on_search_timer_timeout()  # the results of what is typed now, not of a second ago
        first = self._first_result()
        if first is not None:
            self._on_item_clicked(first)
            self.list_widget.setFocus(Qt.FocusReason.ShortcutFocusReason)

    @Slot()
    def _open_current_menu(self) -> None:
        item = self.list_widget.currentItem()
        if item is None or item.data(ID_ROLE) is None:
            return
        rect = self.list_widget.visualItemRect(item)
        self.context_menu(item.data(ID_ROLE)).exec(self.list_widget.viewport().mapToGlobal(rect.center()))

    @Slot()
    def _on_delete_key_pressed(self) -> None:
        item = self.list_widget.currentItem()
        if item is not None and item.data(ID_ROLE) is not None:
            self._cursor_row = self.list_widget.row(item)
            self.delete_requested.emit(item.data(ID_ROLE))

    @Slot(str)
    def _on_search_text_changed(self, _text: str) -> None:
        self._search_timer.start()

    @Slot()
    def _on_search_timer_timeout(self) -> None:
        text = self.search_edit.text().strip()
        if text != self._last_search:
            self._last_search = text
            self.search_changed.emit(text)

    @Slot()
    def _on_undo_clicked(self) -> None:
        conversation_id = self._undo_id
        self.hide_undo()
        if conversation_id is not None:
            self._cursor_id = conversation_id
            self.restore_requested.emit(conversation_id)
