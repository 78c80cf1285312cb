"""One message in the transcript: role header with actions, markdown body, status tag, and an
inline editor for user messages (edit → save & regenerate, issue 4 item 5)."""

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, Qt, Signal, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QBoxLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.core.conversation import MessageStatus, Role
from app.core.reasoning import ANSWERED, THINKING, copied_text, split_reasoning
from app.ui.document_chips import DocumentChips
from app.ui.edit_keys import install_edit_shortcuts
from app.ui.markdown_view import MarkdownView
from app.ui.plain_text import plain_tooltip
from app.ui.reasoning_section import ReasoningSection
from app.ui.reply_stats_text import stats_line, stats_tooltip
from app.ui.sources_line import SourcesLine

_ROLE_TITLES = {Role.USER: QT_TRANSLATE_NOOP("MessageBubble", "You"),
                Role.ASSISTANT: QT_TRANSLATE_NOOP("MessageBubble", "Assistant"),
                Role.SYSTEM: QT_TRANSLATE_NOOP("MessageBubble", "System")}
_STATUS_TAGS = {MessageStatus.STOPPED: QT_TRANSLATE_NOOP("MessageBubble", "stopped"),
                MessageStatus.FAILED: QT_TRANSLATE_NOOP("MessageBubble", "failed")}
_CONTINUABLE = (MessageStatus.STOPPED, MessageStatus.FAILED)
_EDITOR_MIN_PX, _EDITOR_MAX_PX = 60, 240


def _translated(noop: str) -> str:
    """A QT_TRANSLATE_NOOP("MessageBubble", …) of the tables above, translated."""
    return QCoreApplication.translate("MessageBubble", noop)


def _action_button(text: str, tooltip: str) -> QToolButton:
    button = QToolButton()
    button.setObjectName("bubbleAction")
    button.setText(text)
    button.setToolTip(tooltip)
    button.setCursor(Qt.CursorShape.PointingHandCursor)
    button.setFocusPolicy(Qt.FocusPolicy.TabFocus)
    button.setVisible(False)
    return button


MAX_SHOWN_CHARS = 20_000
"""Characters of one message laid out in its bubble. Rich-text layout costs ~6 s per MB on two
cores and is paid again on every resize, so a 2 MB paste froze the window for minutes (found by
a new-user test); the message itself is kept, stored and sent whole."""


class MessageBubble(QFrame):
    """Shows one message; `set_text` shows the new text (called once per frame at most).

    A user's message is shown as typed (plain text, never Markdown). An answer's reasoning
    ("<think>…</think>", app.core.reasoning) is folded above its body (`reasoning`, a
    ReasoningSection, hidden when there is none); the body shows the answer alone. Its body is a
    `MarkdownView` while the reply streams and after it ends (one renderer: the
    end of a stream only highlights a code block that was still open); it renders incrementally,
    so a flush costs time in proportion to the new text, not to the reply. A note under the body
    shows "…" while the first token is awaited (how much of the prompt has been read, when a
    long prefill reports it: `set_prefill_progress`), "(no text)", or how much of a huge message
    is not laid out (and, for a user message, that it is sent whole, or that it was not sent while
    its turn stands refused: `set_sent`).

    Signals: edit_requested(str new_text) — the user saved an edit of this (user) message;
    regenerate_requested() — a new answer for this (last assistant) message;
    continue_requested() — continue this stopped/failed (last assistant) message;
    version_requested(int step) — show the version `step` away (−1 older, +1 newer);
    branch_requested() — copy the conversation up to this message into a new chat;
    pin_requested() — add this message to the conversation's pinned notes;
    document_remove_requested(int index) — remove the document at `index` from this message.

    Under the text: the documents kept with a user message (`documents`, a DocumentChips) and
    the excerpts an answer was given (`sources`, a SourcesLine whose links open each one).

    Which actions show is decided here from the role, the status and `set_is_last` (set by the
    ChatView): Edit on user messages; Regenerate on the last assistant message once it is no
    longer streaming; Continue on it as well when it was stopped or failed with some text;
    the "⋯" menu (Copy, Branch into a new chat, Pin to notes) on every settled message; the version
    switcher "‹ 2 / 3 ›" when `set_version` says there is more than one.
    """

    edit_requested = Signal(str)
    regenerate_requested = Signal()
    continue_requested = Signal()
    version_requested = Signal(int)
    branch_requested = Signal()
    pin_requested = Signal()
    document_remove_requested = Signal(int)

    def __init__(self, role: Role, text: str = "", parent=None):
        super().__init__(parent)
        self.role = role
        self.status = MessageStatus.COMPLETE
        self.sent = True  # False: a user message whose turn was refused (set_sent)
        self._is_last = False
        self._actions_enabled = True
        self.setObjectName(f"bubble_{role.value}")
        self.setAccessibleName(self.tr("{0} message").format(_translated(_ROLE_TITLES[role])))
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self._header = QLabel(_translated(_ROLE_TITLES[role]))
        self._header.setObjectName("bubbleHeader")
        self._header.setTextFormat(Qt.TextFormat.PlainText)  # an error detail shows literally
        self._header.setWordWrap(True)
        self._header.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.reasoning = ReasoningSection()
        self.reasoning.setVisible(False)
        self._body = MarkdownView()
        self._body.setAccessibleName(self.tr("Message text"))
        self._note = QLabel()
        self._note.setObjectName("bubbleNote")
        self._note.setTextFormat(Qt.TextFormat.PlainText)
        self._note.setWordWrap(True)
        self._note.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._note.setVisible(False)
        self.stats_label = QLabel()
        self.stats_label.setObjectName("bubbleStats")
        self.stats_label.setWordWrap(True)  # trial 10: at 640 px the Korean line was cut mid-syllable
        self.stats_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.stats_label.setVisible(False)
        self.stats = None
        self.documents = DocumentChips()
        self.sources = SourcesLine()
        self.edit_button = _action_button(self.tr("Edit"), self.tr("Edit this message and get a new answer from here"))
        self.continue_button = _action_button(self.tr("Continue"), self.tr("Continue this answer from where it ended"))
        self.continue_button.setProperty("accent", True)
        self.regenerate_button = _action_button(self.tr("Regenerate"),
                                                self.tr("Write a new version of this answer (the old one stays)"))
        self.more_button = _action_button("⋯", self.tr("More actions for this message"))
        self.more_button.setAccessibleName(self.tr("More actions"))
        self.more_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.more_button)
        self.copy_action = menu.addAction(self.tr("Copy"))
        self.copy_action.setToolTip(self.tr("Copy this message as you typed it") if role is Role.USER
                                    else self.tr("Copy this message as Markdown, as it was written"))
        self.branch_action = menu.addAction(self.tr("Branch into a new chat"))
        self.branch_action.setToolTip(self.tr("Continue from this message in a chat of its own"))
        self.pin_action = menu.addAction(self.tr("Pin to notes"))
        self.pin_action.setToolTip(self.tr("Keep this message in every prompt of this chat"))
        self.more_button.setMenu(menu)
        self._version = (1, 1)
        self.older_button = _action_button("‹", self.tr("Show the previous version"))
        self.newer_button = _action_button("›", self.tr("Show the next version"))
        self.version_label = QLabel()
        self.version_label.setObjectName("bubbleVersion")
        self.version_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.version_label.setMinimumHeight(self.older_button.sizeHint().height())  # in line with the arrows
        self.version_label.setVisible(False)
        self._actions = QHBoxLayout()
        self._actions.setContentsMargins(0, 0, 0, 0)
        self._actions.setSpacing(2)
        self._actions.addStretch(1)  # right-aligned when stacked below the title; no room taken beside it
        for widget in (self.older_button, self.version_label, self.newer_button):
            self._actions.addWidget(widget, 0, Qt.AlignmentFlag.AlignTop)
        for button in (self.continue_button, self.regenerate_button, self.edit_button, self.more_button):
            self._actions.addWidget(button, 0, Qt.AlignmentFlag.AlignTop)
        # the title beside the actions, or above them when it does not fit beside them (_fit_header)
        self._header_row = QBoxLayout(QBoxLayout.Direction.LeftToRight)
        self._header_row.setContentsMargins(0, 0, 0, 0)
        self._header_row.setSpacing(2)
        self._header_row.addWidget(self._header, 1)
        self._header_row.addLayout(self._actions)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 8)
        layout.setSpacing(2)
        layout.addLayout(self._header_row)
        layout.addWidget(self.reasoning)
        layout.addWidget(self._body)
        layout.addWidget(self._note)
        layout.addWidget(self.documents)
        layout.addWidget(self.sources)
        layout.addWidget(self.stats_label)
        layout.addWidget(self._build_editor())
        self._layout = layout
        self.edit_button.clicked.connect(self._on_edit_clicked)
        self.regenerate_button.clicked.connect(self.regenerate_requested)
        self.continue_button.clicked.connect(self.continue_requested)
        self.copy_action.triggered.connect(self._on_copy_triggered)
        self.branch_action.triggered.connect(self.branch_requested)
        self.pin_action.triggered.connect(self.pin_requested)
        self.documents.remove_requested.connect(self.document_remove_requested)
        self.older_button.clicked.connect(lambda: self.version_requested.emit(-1))
        self.newer_button.clicked.connect(lambda: self.version_requested.emit(+1))
        self.text = ""
        self.answer = ""  # what the body shows: the text, less an answer's reasoning
        self._prefill: tuple[int, int] | None = None  # (tokens read, tokens to read) of a long prefill
        self._waiting = ""  # what this answer waits for before it starts (a summary being written)
        self.set_text(text)

    def _build_editor(self) -> QWidget:
        self._edit_panel = QWidget()
        self._edit_panel.setObjectName("bubbleEditPanel")
        self.editor = QPlainTextEdit()
        self.editor.setObjectName("bubbleEditor")
        self.editor.setTabChangesFocus(True)
        self.editor.textChanged.connect(self._on_editor_text_changed)
        self._edit_hint = QLabel()
        self._edit_hint.setObjectName("bubbleEditHint")
        self._edit_hint.setWordWrap(True)
        self.cancel_button = QPushButton(self.tr("Cancel"))
        self.cancel_button.setObjectName("bubbleEditCancel")
        self.save_button = QPushButton(self.tr("Save && regenerate"))
        self.save_button.setObjectName("bubbleEditSave")
        self.save_button.setDefault(True)
        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.addWidget(self._edit_hint, 1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.save_button)
        layout = QVBoxLayout(self._edit_panel)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(6)
        layout.addWidget(self.editor)
        layout.addLayout(buttons)
        self.cancel_button.clicked.connect(self.cancel_edit)
        self.save_button.clicked.connect(self._on_save_clicked)
        install_edit_shortcuts(self.editor, self._on_save_clicked, self.cancel_edit)
        self._edit_panel.setVisible(False)
        return self._edit_panel

    # ----- content -------------------------------------------------------------------------
    def set_text(self, text: str) -> None:
        self.text = text
        self._prefill = None  # new text: the prompt has been read
        self._render()
        self._update_actions()

    def shown_text(self) -> str:
        """What the bubble shows as text: the reasoning's title (and the reasoning while it is
        expanded), the rendered body, then the note (if any)."""
        reasoning = self.reasoning.plain_text() if not self.reasoning.isHidden() else ""
        note = self._note.text() if not self._note.isHidden() else ""
        return "\n".join(part for part in (reasoning, self._body.plain_text(), note) if part)

    def set_sent(self, sent: bool) -> None:
        """Whether this message went to the model: False while its turn stands refused, so that
        the note under a huge message does not say it was sent (new-user trial: a refused 100 KB
        paste said "the whole message is kept and sent")."""
        self.sent = sent
        self._render_note()

    def set_prefill_progress(self, done_tokens: int, total_tokens: int) -> None:
        """While this answer streams and before its next text: how much of the prompt the model has
        read, in the note under the text ("Reading the prompt… 1,200 / 5,200 tokens"). New text or
        the end of the stream takes it away."""
        self._prefill = (done_tokens, total_tokens)
        self._render_note()

    def set_waiting(self, text: str) -> None:
        """While this answer streams and has not started: what it waits for, in the note under
        the text ("Waiting for the summary of “Trip” to be written…"); "" when it no longer
        waits. The end of the stream takes it away."""
        self._waiting = text
        self._render_note()

    def _render(self) -> None:
        if self.role is Role.USER:  # the user's own words, as typed: never read as Markdown
            self.answer = self.text
            self._body.set_plain(self.text[:MAX_SHOWN_CHARS])
        else:
            streaming = self.status is MessageStatus.STREAMING
            parts = split_reasoning(self.text, streaming=streaming)
            self.answer = parts.answer
            reasoning = parts.reasoning if len(parts.reasoning) <= MAX_SHOWN_CHARS else (
                parts.reasoning[:MAX_SHOWN_CHARS] + "\n\n…")  # laid out as much as an answer is
            self.reasoning.show_reasoning(reasoning, parts.state == ANSWERED, streaming)
            self.reasoning.setVisible(bool(parts.reasoning) or parts.state == THINKING and streaming)
            self._body.set_markdown(parts.answer[:MAX_SHOWN_CHARS], final=not streaming)
        self._render_note()

    def _render_note(self) -> None:
        if self._waiting and self.status is MessageStatus.STREAMING:
            note = self._waiting
        elif self._prefill is not None and self.status is MessageStatus.STREAMING:
            note = self.tr("Reading the prompt… {0} / {1} tokens", "", self._prefill[1]).format(
                f"{self._prefill[0]:,}", f"{self._prefill[1]:,}")
        elif len(self.answer) > MAX_SHOWN_CHARS:
            note = self._not_shown_note(len(self.answer) - MAX_SHOWN_CHARS)
        elif self.answer:
            note = ""
        elif not self.reasoning.isHidden():  # reasoning and no answer: "Thinking…" says it while it streams
            note = "" if self.status is MessageStatus.STREAMING else self.tr("(no answer)")
        elif self.status in _CONTINUABLE:
            note = self.tr("(no text)")
        else:
            note = "…"  # waiting for the first token
        self._note.setText(note)
        self._note.setVisible(bool(note) and not self.is_editing())

    def _not_shown_note(self, hidden: int) -> str:
        """How many characters of a huge message are not laid out, and what became of it: an
        answer is kept (not "sent"), a user message was sent, or not while its turn is refused."""
        if self.role is not Role.USER:
            text = self.tr("… {0} more characters not shown here (the whole answer is kept: Copy and Export take "
                           "all of it)", "", hidden)
        elif not self.sent:
            text = self.tr("… {0} more characters not shown here (the whole message is kept, but it was not sent)",
                           "", hidden)
        else:
            text = self.tr("… {0} more characters not shown here (the whole message is kept and sent)", "", hidden)
        return text.format(f"{hidden:,}")

    def set_stats(self, stats) -> None:
        """How this answer was made (a ReplyStats, None: nothing shown): one small line, the
        details on hover."""
        self.stats = stats
        self.stats_label.setText(stats_line(stats) if stats is not None else "")
        self.stats_label.setToolTip(stats_tooltip(stats) if stats is not None else "")
        self.stats_label.setAccessibleName(stats_tooltip(stats) if stats is not None else "")
        self.stats_label.setVisible(stats is not None and self.status is not MessageStatus.STREAMING)

    def set_status(self, status: MessageStatus, detail: str = "") -> None:
        was_streaming = self.status is MessageStatus.STREAMING
        self.status = MessageStatus(status)
        if self.status is not MessageStatus.STREAMING:
            self._prefill = None  # a reply stopped while its prompt was read
            self._waiting = ""  # or while it waited
        tag = _STATUS_TAGS.get(self.status)
        title = _translated(_ROLE_TITLES[self.role])
        if tag and detail:
            title = self.tr("{0} — {1}: {2}").format(title, _translated(tag), detail)
        elif tag:
            title = self.tr("{0} — {1}").format(title, _translated(tag))
        self._header.setText(title)
        self._fit_header()
        self._header.setToolTip(plain_tooltip(detail))
        self.setAccessibleDescription(self._header.text())
        if not self.text or was_streaming != (self.status is MessageStatus.STREAMING):
            self._render()
        self.stats_label.setVisible(self.stats is not None and self.status is not MessageStatus.STREAMING)
        self.setProperty("status", self.status.value)
        self.style().unpolish(self)
        self.style().polish(self)
        self._update_actions()

    # ----- actions -------------------------------------------------------------------------
    def set_is_last(self, is_last: bool) -> None:
        """Called by the ChatView: only the last bubble offers Regenerate / Continue."""
        self._is_last = is_last
        self._update_actions()

    def set_version(self, number: int, count: int) -> None:
        """This message is version `number` (from 1) of `count`; the switcher shows when count > 1."""
        self._version = (number, count)
        self.version_label.setText(f"{number} / {count}")
        self.version_label.setAccessibleName(self.tr("Version {0} of {1}").format(number, count))
        self._update_actions()

    def version(self) -> tuple[int, int]:
        return self._version

    def set_actions_enabled(self, enabled: bool) -> None:
        """False while a reply or a summary is being generated: actions show but do nothing."""
        self._actions_enabled = enabled
        self._update_actions()

    def is_editing(self) -> bool:
        return not self._edit_panel.isHidden()

    def begin_edit(self) -> None:
        """Open the inline editor on this (user) message, filled with its text."""
        if self.role is not Role.USER:
            raise ValueError("only user messages can be edited")
        self.editor.setPlainText(self.text)
        keys = self.tr("Ctrl+Enter to save · Esc to cancel")
        self._edit_hint.setText(keys if self._is_last
                                else self.tr("The answers below stay as the older version. {0}").format(keys))
        self._body.setVisible(False)
        self._note.setVisible(False)
        self._edit_panel.setVisible(True)
        self._update_actions()
        self.editor.setFocus()
        self.editor.moveCursor(self.editor.textCursor().MoveOperation.End)

    @Slot()
    def cancel_edit(self) -> None:
        self._edit_panel.setVisible(False)
        self._body.setVisible(True)
        self._note.setVisible(bool(self._note.text()))
        self._update_actions()

    @Slot()
    def _on_copy_triggered(self) -> None:
        """The whole message as written: a user's text as typed, an answer's Markdown source (not
        the rendered HTML, nor only the part shown) without its reasoning, as other chat apps copy
        it; the reasoning when that is all there is (a reply stopped while it reasoned)."""
        QGuiApplication.clipboard().setText(copied_text(self.text) if self.role is Role.ASSISTANT else self.text)

    @Slot()
    def _on_edit_clicked(self) -> None:
        self.begin_edit()

    @Slot()
    def _on_save_clicked(self) -> None:
        new_text = self.editor.toPlainText().strip()
        if not new_text or not self.save_button.isEnabled():
            return
        self.cancel_edit()
        self.set_text(new_text)
        self.edit_requested.emit(new_text)

    @Slot()
    def _on_editor_text_changed(self) -> None:
        lines = max(2, self.editor.document().lineCount())
        height = lines * self.editor.fontMetrics().lineSpacing() + 18
        self.editor.setFixedHeight(max(_EDITOR_MIN_PX, min(_EDITOR_MAX_PX, height)))
        self._update_actions()

    def _fit_header(self) -> None:
        """Stack the title above the actions when it does not fit on one line beside them (a narrow
        window, trial 8: "Assistant — stopped: max new tokens reached" wrapped a word a line
        beside the version arrows, Continue and Regenerate); side by side when it does."""
        layout = self.layout()
        if layout is None:  # still being built
            return
        margins = layout.contentsMargins()
        actions = self._actions.sizeHint().width()
        room = (self.contentsRect().width() - margins.left() - margins.right() - actions
                - self._header_row.spacing())
        needed = self._header.fontMetrics().horizontalAdvance(self._header.text())
        stacked = actions > 0 and needed > room
        self._header_row.setDirection(QBoxLayout.Direction.TopToBottom if stacked
                                      else QBoxLayout.Direction.LeftToRight)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._fit_header()

    def _update_actions(self) -> None:
        editing = self.is_editing()
        settled = self.status is not MessageStatus.STREAMING
        assistant_last = self.role is Role.ASSISTANT and self._is_last and settled and not editing
        self.edit_button.setVisible(self.role is Role.USER and not editing)
        self.regenerate_button.setVisible(assistant_last)
        self.continue_button.setVisible(
            assistant_last and self.status in _CONTINUABLE and bool(self.text.strip()))
        self.more_button.setVisible(settled and not editing)
        number, count = self._version
        for widget in (self.older_button, self.version_label, self.newer_button):
            widget.setVisible(count > 1 and not editing)
        self.older_button.setEnabled(self._actions_enabled and number > 1)
        self.newer_button.setEnabled(self._actions_enabled and number < count)
        for button in (self.edit_button, self.regenerate_button, self.continue_button, self.more_button):
            button.setEnabled(self._actions_enabled)
        self.documents.set_removable(self._actions_enabled)
        self._fit_header()  # the actions shown changed their width
        if editing:
            self.save_button.setEnabled(
                self._actions_enabled and bool(self.editor.toPlainText().strip()))
