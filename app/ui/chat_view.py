"""The transcript: the summary block, then a scrolling column of message bubbles and notices.

Streamed text is buffered and flushed to the last bubble at most once per frame (~60 Hz),
so a fast model never floods the GUI thread with re-layouts.

Message index = position of the message in the conversation (and in the store): one bubble per
message, system messages included, notices not counted. Edit / Regenerate / Continue are
re-emitted with that index (issue 4 item 5).

A chat opens with its last SHOWN_AT_OPEN messages built; the older ones get their bubbles a page
at a time, from "Show earlier messages" at the top or by scrolling to it (a bubble costs ~6 ms:
a 1,000-message chat froze the window 35 s as it opened). Every index in and out stays the
message's position in the conversation; `bubbles()` holds the built ones, from `hidden_count()`.
"""

from collections.abc import Iterable
from dataclasses import replace

from PySide6.QtCore import QSize, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import QPushButton, QScrollArea, QVBoxLayout, QWidget

from app.chat.error_text import plain_failure
from app.chat.stop_text import stop_detail
from app.core.conversation import Message, MessageStatus, Role
from app.ui.fold_marker import FoldMarker
from app.ui.message_bubble import MessageBubble
from app.ui.notice import Notice
from app.ui.retry_notice import RetryNotice
from app.ui.summary_block import SummaryBlock

FRAME_MS = 16
FOLLOW_SLACK_PX = 40  # a user this close to the end is still reading the end: keep following
ANCHOR_QUIET_MS = 1000  # the reader's place is kept until the layout is this long without a change
# a bubble costs ~6 ms (markdown, code highlighting, layout): 20 of them stay near the 100 ms a
# click may take (40 froze the window 250 ms); 20 long answers are still several screens
SHOWN_AT_OPEN = 20  # messages built when a chat opens; older ones on demand
EARLIER_PAGE = 20  # messages built per "Show earlier messages" (or scrolling to the top)


class _Column(QWidget):
    """The scrolling column of cards. It never asks to be wider than the view (the horizontal
    scroll bar is off): a card that cannot get narrower is cut at its own right edge, not every
    card with it (trial 9: one wide header pushed all of them, "⋯" menus included, out of view)."""

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        return QSize(0, super().minimumSizeHint().height())


class ChatView(QScrollArea):
    """Append bubbles, stream into the last one, show notices; host the summary block.

    Signals: edit_requested(int index, str new_text) — the user saved an edit of the user
    message at `index` (its bubble already shows the new text; the view keeps the bubbles after
    it until `truncate`); regenerate_requested(int index) — a new answer in place of the
    assistant message at `index`; continue_requested(int index) — continue the stopped or
    failed assistant message at `index`; version_requested(int index, int step) — show another
    version of the message at `index` (−1 older, +1 newer); branch_requested(int index) — a new
    chat from the conversation up to the message at `index`; pin_requested(int index) — add the
    message at `index` to the pinned notes; document_remove_requested(int index, int document) —
    remove the `document`-th file attached to the message at `index`; retry_requested() — Retry
    on the notice of a failed last turn (a notice of kind "retry").

    Actions are disabled while a stream is open and while `set_actions_enabled(False)`.
    """

    edit_requested = Signal(int, str)
    regenerate_requested = Signal(int)
    continue_requested = Signal(int)
    version_requested = Signal(int, int)
    branch_requested = Signal(int)
    pin_requested = Signal(int)
    document_remove_requested = Signal(int, int)
    retry_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("chatView")
        self.setAccessibleName(self.tr("Conversation"))
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._column = _Column()
        self._column.setObjectName("chatColumn")
        self._layout = QVBoxLayout(self._column)
        self._layout.setContentsMargins(12, 12, 12, 12)
        self._layout.setSpacing(8)
        self.summary_block = SummaryBlock()
        self._layout.addWidget(self.summary_block)
        self.earlier_button = QPushButton()
        self.earlier_button.setObjectName("earlierButton")
        self.earlier_button.hide()
        self.earlier_button.clicked.connect(self.show_earlier)
        self._layout.addWidget(self.earlier_button, 0, Qt.AlignmentFlag.AlignHCenter)
        self._layout.addStretch(1)
        self.setWidget(self._column)
        self._bubbles: list[MessageBubble] = []
        self._unbuilt: list[Message] = []  # the oldest messages, no bubble yet (index = position)
        self._unbuilt_notes: dict[int, dict[str, str]] = {}  # their document notes: index → name → text
        self._versions: list = []  # (number, count) per message, for bubbles built later
        # while earlier bubbles settle above the reader: the widget read at the top of the view and
        # its distance from the view's top, kept until the reader scrolls or the layout is quiet
        self._anchor: tuple[QWidget, int] | None = None
        self._anchor_quiet = QTimer(self)
        self._anchor_quiet.setSingleShot(True)
        self._anchor_quiet.setInterval(ANCHOR_QUIET_MS)
        self._anchor_quiet.timeout.connect(self._release_place)
        self.fold_marker: FoldMarker | None = None  # below the last turn the summary folds
        self._folded_turns = 0
        self._actions_enabled = True
        self._streaming: MessageBubble | None = None
        self._elsewhere: Notice | None = None  # "The answer in “…” is still being written…"
        self._pending = ""
        self._flush_timer = QTimer(self)
        self._flush_timer.setInterval(FRAME_MS)
        self._flush_timer.timeout.connect(self.flush)
        # Follow the end while the user is at it: decided when the user scrolls (valueChanged),
        # not when the content grows, so a burst or the final render of an answer taller than
        # the slack is followed, and a user who scrolled up is left where they are.
        self._following = True
        self.verticalScrollBar().valueChanged.connect(self._on_vertical_value_changed)
        self.verticalScrollBar().actionTriggered.connect(self._release_place)  # the reader scrolls: theirs
        self.verticalScrollBar().rangeChanged.connect(self._on_vertical_range_changed)

    # ----- reading -------------------------------------------------------------------------
    def bubbles(self) -> list[MessageBubble]:
        """The built message bubbles, oldest first: bubble i is message hidden_count() + i."""
        return list(self._bubbles)

    def hidden_count(self) -> int:
        """How many of the oldest messages have no bubble yet (shown by `show_earlier`)."""
        return len(self._unbuilt)

    def transcript_text(self) -> str:
        """Plain text of every built bubble, oldest first (for tests and copy)."""
        return "\n\n".join(b.text for b in self._bubbles)

    # ----- building ------------------------------------------------------------------------
    def clear(self) -> None:
        """Remove every bubble and notice and empty the summary block (new/other conversation)."""
        self.end_stream()
        self._remove_from(self._layout.indexOf(self.earlier_button) + 1)
        self._unbuilt, self._unbuilt_notes, self._versions = [], {}, []
        self._release_place()
        self._show_earlier_button()
        self.summary_block.clear()

    def load_messages(self, messages: Iterable[Message]) -> None:
        """Show a whole stored transcript, statuses included (replaces what is shown; the summary
        block is emptied: call `summary_block.set_summary` afterwards)."""
        self.clear()
        messages = list(messages)
        split = max(len(messages) - SHOWN_AT_OPEN, 0)
        self._unbuilt = messages[:split]
        for message in messages[split:]:
            self._bubbles.append(self._build(message, self._layout.count() - 1))
        self._show_earlier_button()
        # once, not per bubble: per bubble it touched every bubble before it (1,000 messages: ~15 s)
        self._follow_end()
        self._refresh_actions()

    @Slot()
    def show_earlier(self) -> None:
        """Build the next EARLIER_PAGE older messages above the first shown, the reader's place
        kept (what was on screen stays there)."""
        if not self._unbuilt:
            return
        page = self._unbuilt[-EARLIER_PAGE:]
        first = len(self._unbuilt) - len(page)  # the page's first message index
        del self._unbuilt[first:]
        bar = self.verticalScrollBar()
        read = next((b for b in self._bubbles if b.geometry().bottom() >= bar.value()), None)
        self._anchor = (read, read.y() - bar.value()) if read is not None else None
        self._following = False
        at = self._layout.indexOf(self.earlier_button) + 1
        built = [self._build(message, at + k) for k, message in enumerate(page)]
        self._bubbles[0:0] = built
        for k, bubble in enumerate(built):
            bubble.set_version(*self._version(first + k))
            for name, text in self._unbuilt_notes.pop(first + k, {}).items():
                self.add_document_note(first + k, name, text, follow=False)
        self._show_earlier_button()
        self._place_fold_marker()
        self._refresh_actions()
        self._column.layout().activate()
        self._keep_place()
        self._anchor_quiet.start()  # the new bubbles' heights settle meanwhile (wrapping, first paint)

    def _keep_place(self) -> None:
        """The anchored widget back at its distance from the view's top (trial 5: with the
        distance from the bottom kept for 200 ms, later pages moved what was read 1,400 px down)."""
        if self._anchor is None:
            return
        widget, offset = self._anchor
        if widget not in self._bubbles:  # truncated or cleared meanwhile
            self._release_place()
            return
        self.verticalScrollBar().setValue(widget.y() - offset)

    def _release_place(self, *_action) -> None:
        self._anchor = None
        self._anchor_quiet.stop()

    def _show_earlier_button(self) -> None:
        hidden = len(self._unbuilt)
        self.earlier_button.setVisible(hidden > 0)
        if hidden:
            self.earlier_button.setText(self.tr("Show %n earlier messages", "", hidden))

    def _build(self, message: Message, at: int) -> MessageBubble:
        """A bubble for a stored `message`, inserted at layout position `at`."""
        bubble = self._add_bubble(message.role, message.content, message.status, at)
        if message.status is MessageStatus.STOPPED and stop_detail(message.stats):
            bubble.set_status(message.status, stop_detail(message.stats))  # "max new tokens reached"
        elif message.status is MessageStatus.FAILED and message.failure:  # as its header said when it failed
            bubble.set_status(message.status, plain_failure(message.failure, "reply").what)
        bubble.set_stats(message.stats)
        bubble.documents.set_documents(message.documents)
        bubble.sources.set_sources(message.sources)
        return bubble

    def truncate(self, index: int) -> None:
        """Drop the bubbles from `index` on, with the notices below them (edit / regenerate).
        An open stream among them is closed. Raises IndexError when `index` < 0."""
        if index < 0:
            raise IndexError(index)
        if index < len(self._unbuilt):  # some not built yet go too
            del self._unbuilt[index:]
            self._unbuilt_notes = {i: notes for i, notes in self._unbuilt_notes.items() if i < index}
            self._show_earlier_button()
        i = max(index - len(self._unbuilt), 0)
        if i >= len(self._bubbles):
            return
        if self._streaming in self._bubbles[i:]:
            self._flush_timer.stop()
            self._streaming, self._pending = None, ""
        self._remove_from(self._layout.indexOf(self._bubbles[i]))
        self._refresh_actions()

    def add_message(self, role: Role, text: str,
                    status: MessageStatus = MessageStatus.COMPLETE) -> MessageBubble:
        bubble = self._add_bubble(role, text, status)
        self._follow_end()
        self._refresh_actions()
        return bubble

    def _add_bubble(self, role: Role, text: str, status: MessageStatus, at: int | None = None) -> MessageBubble:
        """A bubble after the last (or at layout position `at`, not listed: the caller lists
        it), wired; its actions and the scroll position are not updated."""
        bubble = MessageBubble(role, text)
        if status is not MessageStatus.COMPLETE:
            bubble.set_status(status)
        bubble.edit_requested.connect(self._on_bubble_edit_requested)
        bubble.regenerate_requested.connect(self._on_bubble_regenerate_requested)
        bubble.continue_requested.connect(self._on_bubble_continue_requested)
        bubble.version_requested.connect(self._on_bubble_version_requested)
        bubble.branch_requested.connect(self._on_bubble_branch_requested)
        bubble.pin_requested.connect(self._on_bubble_pin_requested)
        bubble.document_remove_requested.connect(self._on_bubble_document_remove_requested)
        if at is not None:
            self._layout.insertWidget(at, bubble)
            return bubble
        self._layout.insertWidget(self._layout.count() - 1, bubble)
        self._bubbles.append(bubble)
        return bubble

    def add_notice(self, text: str, kind: str = "info") -> Notice | RetryNotice:
        """A notice below the last message: kind "info", "error", "refused" (why a turn was not
        started, until a remedy runs it; the user message above it says it was not sent), "retry"
        (an error about the last turn, with a Retry button until another turn starts), "load"
        (why a model did not open, until `withdraw_load_notices`) or "limit" (the open model's
        limit on max new tokens, as info, until `withdraw_limit_notices`)."""
        if kind == "retry":
            notice = RetryNotice(text)
            notice.retry_requested.connect(self.retry_requested)
        else:  # "refused" and "load" look like errors; each goes when what it said no longer holds
            notice = Notice(text, "error" if kind in ("refused", "load") else "info" if kind == "limit" else kind)
            notice.setProperty("refused", kind == "refused")
            notice.withdrawn_with = kind if kind in ("load", "limit") else ""
        if kind == "refused" and self._bubbles and self._bubbles[-1].role is Role.USER:
            self._bubbles[-1].set_sent(False)  # the message refused: never sent, until a remedy runs it
        self._layout.insertWidget(self._layout.count() - 1, notice)
        self._follow_end()
        return notice

    @Slot()
    def withdraw_load_notices(self) -> None:
        """Remove the notices saying why a model did not open: a model opened since (new-user
        trial: the stale error stayed at the top of the next chat)."""
        self._withdraw("load")

    @Slot()
    def withdraw_limit_notices(self) -> None:
        """Remove the notices about a limit on max new tokens that no longer holds: the context or
        the setting changed since (regression trial: "its answers get at most 128 tokens" stayed
        after the context went back to automatic, and answers got 512)."""
        self._withdraw("limit")

    def _withdraw(self, kind: str) -> None:
        for notice in self._column.findChildren(Notice):
            if getattr(notice, "withdrawn_with", "") == kind:
                self._layout.removeWidget(notice)
                notice.hide()
                notice.deleteLater()

    @Slot(str)
    def show_reply_elsewhere(self, text: str) -> None:
        """The line saying that this chat waits for an answer being written in another
        (Chat.reply_elsewhere): at most one, below the last message; "" takes it away."""
        if self._elsewhere is not None:
            self._layout.removeWidget(self._elsewhere)
            self._elsewhere.hide()
            self._elsewhere.deleteLater()
            self._elsewhere = None
        if text:
            self._elsewhere = self.add_notice(text, "info")

    def reply_elsewhere_text(self) -> str:
        """The line shown by show_reply_elsewhere ("" when none)."""
        return self._elsewhere.text() if self._elsewhere is not None else ""

    @Slot(str, int, int, int)
    def show_summary(self, text: str, folded_turns: int, tokens: int, cap: int) -> None:
        """The summary block (SummaryBlock.set_summary) and the fold marker below the last of the
        `folded_turns` turns it folds (none without a summary)."""
        self.summary_block.set_summary(text, folded_turns, tokens, cap)
        self._folded_turns = folded_turns if text else 0
        self._place_fold_marker()

    @Slot()
    def reveal_summary(self) -> None:
        """Open the summary block and scroll up to it (the fold marker's "Show summary")."""
        self.summary_block.set_expanded(True)
        self._stick_to_bottom = False
        self.ensureWidgetVisible(self.summary_block)

    def _place_fold_marker(self) -> None:
        """Put the marker before the first bubble of the first turn not folded (a turn starts at a
        user message, as app.core.history.group_turns counts them)."""
        if self.fold_marker is not None:
            self._layout.removeWidget(self.fold_marker)
            self.fold_marker.deleteLater()
            self.fold_marker = None
        roles = [m.role for m in self._unbuilt] + [b.role for b in self._bubbles]
        starts = [i for i, role in enumerate(roles) if role is Role.USER or i == 0]
        if not self._folded_turns or len(starts) <= self._folded_turns:
            return
        before = self._bubble_at(starts[self._folded_turns])
        if before is None:  # among the messages not built yet: placed when they are
            return
        self.fold_marker = FoldMarker(self._folded_turns)
        self.fold_marker.summary_requested.connect(self.reveal_summary)
        self._layout.insertWidget(self._layout.indexOf(before), self.fold_marker)

    @Slot(object)
    def show_reply_stats(self, stats) -> None:
        """How the answer that just ended (the last bubble) was made (a ReplyStats)."""
        if self._bubbles and self._bubbles[-1].role is Role.ASSISTANT:
            self._bubbles[-1].set_stats(stats)

    @Slot(object)
    def show_reply_sources(self, sources) -> None:
        """The document excerpts the answer that just ended (the last bubble) was given."""
        if self._bubbles and self._bubbles[-1].role is Role.ASSISTANT:
            self._bubbles[-1].sources.set_sources(sources)

    @Slot(int, object)
    def show_sources(self, index: int, sources) -> None:
        """The excerpts of the answer at `index` changed (Chat.message_sources: a file removed)."""
        if 0 <= index < len(self._unbuilt):
            self._unbuilt[index] = replace(self._unbuilt[index], sources=tuple(sources))
        elif (bubble := self._bubble_at(index)) is not None:
            bubble.sources.set_sources(sources)

    @Slot(int, object)
    def show_documents(self, index: int, documents) -> None:
        """The documents kept with the message at `index` (Chat.message_documents); the notes on
        how a file of it went into its turn show while the file is there (removed: hidden; back
        with Undo: shown again)."""
        if 0 <= index < len(self._unbuilt):
            self._unbuilt[index] = replace(self._unbuilt[index], documents=tuple(documents))
        elif (bubble := self._bubble_at(index)) is not None:
            bubble.documents.set_documents(documents)
            names = {document.name for document in documents}
            for notice in self._column.findChildren(Notice):
                question, name = getattr(notice, "about_document", (None, ""))
                if question is bubble:
                    notice.setVisible(name in names)

    @Slot(int, str, str)
    def add_document_note(self, index: int, name: str, text: str, follow: bool = True) -> None:
        """A notice on how the file `name` of the message at `index` went into the turn
        (Chat.document_noted): "report.pdf: whole file, 812 tokens". It goes right under that
        question (after its other files' notes), and replaces the file's earlier note there (a
        new turn of the same question, or the note said again when the chat is reopened). A
        message not built yet keeps it until it is; `follow`: scroll to the end (a new note)."""
        if 0 <= index < len(self._unbuilt):
            self._unbuilt_notes.setdefault(index, {})[name] = text
            return
        bubble = self._bubble_at(index)
        if bubble is None:
            self.add_notice(text, "info").about_document = (None, name)
            return
        for old in self._column.findChildren(Notice):
            if getattr(old, "about_document", None) == (bubble, name):
                self._layout.removeWidget(old)
                old.hide()
                old.deleteLater()
        at = self._layout.indexOf(bubble) + 1
        while at < self._layout.count() - 1 and getattr(self._layout.itemAt(at).widget(), "about_document",
                                                        (None, ""))[0] is bubble:
            at += 1
        notice = Notice(text, "info")
        notice.setProperty("refused", False)
        notice.about_document = (bubble, name)
        self._layout.insertWidget(at, notice)
        if follow:
            self._follow_end()

    @Slot(list)
    def set_versions(self, versions: list) -> None:
        """(number, count) per bubble, oldest first (Chat.versions_changed); bubbles past the
        list's end show no switcher."""
        self._versions = list(versions)
        for i, bubble in enumerate(self._bubbles, len(self._unbuilt)):
            bubble.set_version(*self._version(i))

    @Slot(bool)
    def set_actions_enabled(self, enabled: bool) -> None:
        """False while generating or summarizing: Edit / Regenerate / Continue do nothing."""
        self._actions_enabled = enabled
        self._refresh_actions()

    # ----- streaming -----------------------------------------------------------------------
    def begin_stream(self, initial_text: str = "") -> MessageBubble:
        """Start a new streaming assistant bubble (a Retry offered earlier no longer applies)."""
        self._expire_retries()
        self._remove_refusals()
        bubble = self.add_message(Role.ASSISTANT, initial_text, MessageStatus.STREAMING)
        return self._open_stream(bubble)

    def _remove_refusals(self) -> None:
        """A refusal below the last message goes when its turn runs after all (a remedy was picked):
        new-user trial, "This turn was not started" stayed between the question and its answer.
        The message is sent now."""
        if self._bubbles and not self._bubbles[-1].sent:
            self._bubbles[-1].set_sent(True)
        after = self._layout.indexOf(self._bubbles[-1]) if self._bubbles else -1
        for index in reversed(range(after + 1, self._layout.count())):
            widget = self._layout.itemAt(index).widget()
            if isinstance(widget, Notice) and widget.property("refused"):
                self._layout.takeAt(index)
                widget.hide()
                widget.deleteLater()

    def _expire_retries(self) -> None:
        for notice in self._column.findChildren(RetryNotice):
            notice.expire()

    def continue_stream(self) -> MessageBubble:
        """Stream into the last (assistant) bubble after its text: Continue (continue after Stop,
        text-generation-webui #7565).
        Raises ValueError when the last bubble is not an assistant message."""
        if not self._bubbles or self._bubbles[-1].role is not Role.ASSISTANT:
            raise ValueError("there is no assistant message to continue")
        self._expire_retries()
        bubble = self._bubbles[-1]
        bubble.set_status(MessageStatus.STREAMING)
        self._follow_end()
        return self._open_stream(bubble)

    def _open_stream(self, bubble: MessageBubble) -> MessageBubble:
        self._streaming = bubble
        self._pending = ""
        self._flush_timer.start()
        self._refresh_actions()
        return bubble

    def show_prefill_progress(self, done_tokens: int, total_tokens: int) -> None:
        """The streaming answer's prompt is being read: `done_tokens` of `total_tokens` (shown under
        it until its first text arrives)."""
        if self._streaming is not None:
            self._streaming.set_prefill_progress(done_tokens, total_tokens)

    @Slot(str)
    def show_reply_waiting(self, text: str) -> None:
        """What the streaming answer waits for before it starts (Chat.reply_waiting), in its note;
        "" when it no longer waits."""
        if self._streaming is not None:
            self._streaming.set_waiting(text)

    def append_stream(self, text: str) -> None:
        """Buffer streamed text; it reaches the screen on the next frame."""
        self._pending += text

    def flush(self) -> None:
        if self._streaming is not None and self._pending:
            self._streaming.set_text(self._streaming.text + self._pending)
            self._pending = ""

    def end_stream(self, status: MessageStatus = MessageStatus.COMPLETE, detail: str = "") -> None:
        self.flush()
        self._flush_timer.stop()
        if self._streaming is not None:
            self._streaming.set_status(status, detail)
        self._streaming = None
        self._refresh_actions()

    # ----- internals -----------------------------------------------------------------------
    def _remove_from(self, layout_index: int) -> None:
        """Delete the layout's widgets from `layout_index` up to the trailing stretch."""
        while self._layout.count() - 1 > layout_index:
            widget = self._layout.takeAt(layout_index).widget()
            if widget is None:
                continue
            if widget in self._bubbles:
                self._bubbles.remove(widget)
            if widget is self.fold_marker:
                self.fold_marker = None
            if widget is self._elsewhere:
                self._elsewhere = None
            widget.hide()
            widget.deleteLater()

    def _refresh_actions(self) -> None:
        enabled = self._actions_enabled and self._streaming is None
        last = len(self._bubbles) - 1
        for i, bubble in enumerate(self._bubbles):
            bubble.set_is_last(i == last)
            bubble.set_actions_enabled(enabled)

    def _index_of_sender(self) -> int:
        return len(self._unbuilt) + self._bubbles.index(self.sender())

    def _bubble_at(self, index: int) -> MessageBubble | None:
        """The bubble of message `index`; None when it has none (not built yet, or past the end)."""
        i = index - len(self._unbuilt)
        return self._bubbles[i] if 0 <= i < len(self._bubbles) else None

    def _version(self, index: int) -> tuple[int, int]:
        return self._versions[index] if 0 <= index < len(self._versions) else (1, 1)

    @Slot(str)
    def _on_bubble_edit_requested(self, new_text: str) -> None:
        self.edit_requested.emit(self._index_of_sender(), new_text)

    @Slot()
    def _on_bubble_regenerate_requested(self) -> None:
        self.regenerate_requested.emit(self._index_of_sender())

    @Slot()
    def _on_bubble_continue_requested(self) -> None:
        self.continue_requested.emit(self._index_of_sender())

    @Slot(int)
    def _on_bubble_version_requested(self, step: int) -> None:
        self.version_requested.emit(self._index_of_sender(), step)

    @Slot()
    def _on_bubble_branch_requested(self) -> None:
        self.branch_requested.emit(self._index_of_sender())

    @Slot()
    def _on_bubble_pin_requested(self) -> None:
        self.pin_requested.emit(self._index_of_sender())

    @Slot(int)
    def _on_bubble_document_remove_requested(self, document: int) -> None:
        self.document_remove_requested.emit(self._index_of_sender(), document)

    def _follow_end(self) -> None:
        """Something new to read (a message, a notice, Continue): back to the end, and follow."""
        self._following = True
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    @Slot(int)
    def _on_vertical_value_changed(self, value: int) -> None:
        bar = self.verticalScrollBar()
        self._following = value >= bar.maximum() - FOLLOW_SLACK_PX
        if value == 0 and bar.maximum() > 0 and self._unbuilt and self._anchor is None:
            QTimer.singleShot(0, self.show_earlier)  # scrolled up to the top: the older ones come

    @Slot(int, int)
    def _on_vertical_range_changed(self, _min: int, maximum: int) -> None:
        if self._anchor is not None:  # earlier bubbles grew above: the reader stays put
            self._keep_place()
            self._anchor_quiet.start()
        elif self._following:
            self.verticalScrollBar().setValue(maximum)
