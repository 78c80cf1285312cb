"""The message composer: Enter sends, Shift+Enter inserts a new line; Send / Stop.

Input methods (issue 14, item 4). Text being composed by an IME (the preedit: a Hangul
syllable still open, a Japanese reading under conversion) is not in the document until the IME
commits it, so an Enter that arrives while a preedit is open must be read with care:

* a Hangul syllable in progress (Korean IMEs on Windows and macOS pass Enter on before they
  commit): the syllable is committed first, then the message is sent, whole and once;
* a conversion in progress (Japanese, Chinese: the IME marks the clause being converted with a
  background): Enter confirms the conversion, as in every other editor, and sends nothing.

Committing asks the platform input method (QInputMethod.commit, synchronous on IBus, Fcitx,
Windows and macOS); if none answers, the preedit is committed here and the IME is reset, so its
own commit cannot add the syllable a second time.
"""

import math

from PySide6.QtCore import QEvent, Qt, Signal, Slot
from PySide6.QtGui import QGuiApplication, QInputMethodEvent, QTextCursor
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QPushButton, QWidget


def _marks_conversion(event: QInputMethodEvent) -> bool:
    """True when the preedit carries a clause highlighted with a background: an IME converting
    a reading (Japanese kana → kanji, Chinese pinyin → hanzi). Hangul composition is underlined."""
    return any(attribute.type == QInputMethodEvent.AttributeType.TextFormat
               and attribute.value.background().style() != Qt.BrushStyle.NoBrush
               for attribute in event.attributes())


class _Editor(QPlainTextEdit):
    """Signals: submitted() — Enter without Shift, with any open preedit committed first."""

    submitted = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setTabChangesFocus(True)  # Tab reaches Send and Attach… (a tab typed here was a trap)
        self.preedit = ""  # what the IME is composing now ("" when nothing)
        self._converting = False

    def inputMethodEvent(self, event: QInputMethodEvent) -> None:  # noqa: N802 (Qt override)
        super().inputMethodEvent(event)
        self.preedit = event.preeditString()
        self._converting = bool(self.preedit) and _marks_conversion(event)

    def commit_preedit(self) -> None:
        """Put the open preedit into the text (the platform IME's commit, else our own)."""
        if not self.preedit:
            return
        preedit = self.preedit
        QGuiApplication.inputMethod().commit()  # a platform IME answers with a commit event now
        if self.preedit:  # none did (or it ignored us): commit it here and make the IME forget it
            commit = QInputMethodEvent()
            commit.setCommitString(preedit)
            self.inputMethodEvent(commit)
            QGuiApplication.inputMethod().reset()

    def keyPressEvent(self, event):
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and self.preedit:
            converting = self._converting
            self.commit_preedit()
            if converting:
                return  # Enter confirmed the conversion: it belongs to the IME, nothing is sent
        if enter and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
            return
        super().keyPressEvent(event)


class Composer(QWidget):
    """Signals: send_requested(str) with the stripped text; stop_requested(); send_blocked() —
    Enter (or Send) with text while an answer is being written or no model can answer: nothing is
    sent and the text stays, so whoever listens says why (new-user trial: Enter in another chat did nothing, silently).

    The editor is as high as its text's wrapped lines, from MIN_LINES to MAX_LINES (then it
    scrolls; fewer where they would take more than a quarter of the window), as in LM Studio or
    ChatGPT: a fixed 80 px left a 640 x 420 window's transcript 130 px (trial 10)."""

    MIN_LINES, MAX_LINES = 2, 8

    send_requested = Signal(str)
    stop_requested = Signal()
    send_blocked = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.editor = _Editor()
        self.editor.setObjectName("composerEditor")
        self.editor.setPlaceholderText(self.tr("Message Headroom — Enter to send, Shift+Enter for a new line"))
        self.editor.setAccessibleName(self.tr("Message"))
        self.editor.setAccessibleDescription(self.tr("Enter sends, Shift+Enter starts a new line"))
        self.send_button = QPushButton(self.tr("Send"))
        self.send_button.setObjectName("sendButton")
        self.stop_button = QPushButton(self.tr("Stop"))
        self.stop_button.setObjectName("stopButton")
        self.stop_button.setVisible(False)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 4, 12, 12)
        layout.addWidget(self.editor, 1)
        layout.addWidget(self.send_button)
        layout.addWidget(self.stop_button)
        self.editor.submitted.connect(self._on_submitted)
        self.send_button.clicked.connect(self._on_submitted)
        self.stop_button.clicked.connect(self.request_stop)
        self.editor.document().documentLayout().documentSizeChanged.connect(self._fit_editor_height)
        self.editor.installEventFilter(self)  # its frame and font are known once it is polished
        self._fit_editor_height()
        self._can_send = False
        self._generating = False
        self._stopping = False

    def add_leading(self, widget: QWidget) -> None:
        """Show `widget` left of the message box (Attach…, as in LM Studio and ChatGPT)."""
        self.layout().insertWidget(0, widget)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt override)
        if watched is self.editor and event.type() in (QEvent.Type.Polish, QEvent.Type.FontChange,
                                                       QEvent.Type.StyleChange, QEvent.Type.Show):
            if event.type() == QEvent.Type.Show and self.window() is not self:
                self.window().installEventFilter(self)  # its height bounds the editor's (once: Qt keeps one)
            self._fit_editor_height()
        elif watched is self.window() and event.type() == QEvent.Type.Resize:
            self._fit_editor_height()
        return super().eventFilter(watched, event)

    @Slot()
    def _fit_editor_height(self) -> None:
        """The editor's height for its lines (QTextDocument.lineCount: wrapped lines, after
        layout; the placeholder counts as MIN_LINES) plus the document margins and its frame."""
        editor = self.editor
        line = editor.fontMetrics().lineSpacing()
        chrome = 2 * editor.frameWidth() + 2 * editor.document().documentMargin()
        most = self.MAX_LINES
        if self.window() is not self:  # in a window: a small one keeps room for its transcript
            most = max(self.MIN_LINES, min(most, int(self.window().height() / 4 - chrome) // line))
        count = editor.document().lineCount()
        lines = min(most, max(self.MIN_LINES, count))
        height = math.ceil(lines * line + chrome) + 1  # QPlainTextEdit scrolls when the lines fill it exactly
        # a scroll bar only past the cap: one that came and went below it changed the wrap width,
        # hence the line count, hence the height, back and forth
        policy = Qt.ScrollBarPolicy.ScrollBarAsNeeded if count > most else Qt.ScrollBarPolicy.ScrollBarAlwaysOff
        if editor.verticalScrollBarPolicy() != policy:
            editor.setVerticalScrollBarPolicy(policy)
        if (editor.minimumHeight(), editor.maximumHeight()) != (height, height):
            editor.setFixedHeight(height)

    def put_back(self, text: str) -> None:
        """Put `text` (a message taken back from the chat) into the message box: alone when it is
        empty, else before what is typed there, which stays, as does the cursor in it."""
        editor = self.editor
        if not editor.toPlainText().strip():
            editor.setPlainText(text)
            editor.moveCursor(QTextCursor.MoveOperation.End)  # typing goes on after it, not before
            return
        cursor = QTextCursor(editor.document())  # not the editor's own: the user's cursor stays put
        cursor.movePosition(QTextCursor.MoveOperation.Start)
        cursor.insertText(text + "\n\n")

    def set_generating(self, generating: bool) -> None:
        self._generating = generating
        self._stopping = False
        self.send_button.setVisible(not generating)
        self.stop_button.setVisible(generating)
        self.send_button.setEnabled(self._can_send and not generating)

    def set_can_send(self, can_send: bool) -> None:
        """False while no model is loaded; the text typed meanwhile is kept."""
        self._can_send = can_send
        self.send_button.setEnabled(can_send and not self._generating)

    @Slot()
    def request_stop(self) -> None:
        """Stop the answer (the Stop button, Esc): emits stop_requested."""
        # a message sent now goes right after the reply stops (Stop that does not stop, text-generation-webui #1749)
        self._stopping = True
        self.stop_requested.emit()

    def _on_submitted(self) -> None:
        self.editor.commit_preedit()  # the Send button, clicked mid-syllable, sends it too
        text = self.editor.toPlainText().strip()
        if text and (not self._can_send or (self._generating and not self._stopping)):
            self.send_blocked.emit()
            return
        if not text or not self._can_send or (self._generating and not self._stopping):
            return
        self.editor.clear()
        self.send_requested.emit(text)
