"""The "Earlier in this conversation" block at the top of the transcript (issue 4 item 2).

It shows the rolling summary the model wrote of the turns that left the context window, how many
turns it stands for and its size against its token cap; the user can collapse it, correct it
(Edit → Save / Cancel) and cancel a summary while it is being written.
"""

from PySide6.QtCore import QCoreApplication, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.ui.edit_keys import install_edit_shortcuts


def title() -> str:
    return QCoreApplication.translate("SummaryBlock", "Earlier in this conversation")


def _explain() -> str:
    return QCoreApplication.translate(
        "SummaryBlock", "Turns that no longer fit in the model's context window are folded into this summary,\n"
        "written by the model itself. It is sent with every message in place of those turns,\n"
        "so correcting it changes what the assistant remembers.")


class SummaryBlock(QFrame):
    """Collapsible rolling summary with edit and a "summarizing…" busy state.

    Signals: summary_edited(str text) — the user saved a corrected summary (stripped; may be
    empty, meaning "forget it"); cancel_summary_requested() — stop the summary being written.

    Hidden while there is no summary and none is being written.
    """

    summary_edited = Signal(str)
    cancel_summary_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("summaryBlock")
        self._text = ""
        self._folded_turns = 0
        self._tokens = 0
        self._cap = 0
        self._summarizing = False
        self._editing = False
        self.toggle_button = QToolButton()
        self.toggle_button.setObjectName("summaryToggle")
        self.toggle_button.setCheckable(True)
        self.toggle_button.setChecked(True)
        self.toggle_button.setToolTip(_explain())
        self.toggle_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.meta_label = QLabel()
        self.meta_label.setObjectName("summaryMeta")
        self.meta_label.setWordWrap(True)  # else its one line sets the transcript's width (trial 9)
        self.meta_label.setToolTip(_explain())
        self.edit_button = QToolButton()
        self.edit_button.setObjectName("summaryAction")
        self.edit_button.setText(self.tr("Edit"))
        self.edit_button.setToolTip(self.tr("Correct the summary the assistant keeps of earlier turns"))
        self.edit_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.text_label = QLabel()
        self.text_label.setObjectName("summaryText")
        self.text_label.setWordWrap(True)
        self.text_label.setTextFormat(Qt.TextFormat.PlainText)
        self.text_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.setSpacing(8)
        header.addWidget(self.toggle_button)
        header.addWidget(self.meta_label, 1)
        header.addWidget(self.edit_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 10)
        layout.setSpacing(6)
        layout.addLayout(header)
        layout.addWidget(self._build_busy_row())
        layout.addWidget(self.text_label)
        layout.addWidget(self._build_editor())
        self.toggle_button.toggled.connect(self._on_toggle_toggled)
        self.edit_button.clicked.connect(self._on_edit_clicked)
        self._refresh()

    def _build_busy_row(self) -> QWidget:
        self.busy_row = QWidget()
        self.busy_row.setObjectName("summaryBusy")
        self.busy_bar = QProgressBar()
        self.busy_bar.setRange(0, 0)  # indeterminate
        self.busy_bar.setTextVisible(False)
        self.busy_bar.setFixedSize(72, 6)
        self.busy_label = QLabel(self.tr("Summarizing earlier turns…"))
        self.busy_label.setObjectName("summaryBusyLabel")
        self.busy_label.setWordWrap(True)
        self.cancel_button = QPushButton(self.tr("Cancel"))
        self.cancel_button.setObjectName("summaryCancel")
        self.cancel_button.setToolTip(self.tr("Stop writing the summary; the turns stay in the window for now"))
        row = QHBoxLayout(self.busy_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.busy_bar)
        row.addWidget(self.busy_label, 1)
        row.addWidget(self.cancel_button)
        self.cancel_button.clicked.connect(self.cancel_summary_requested)
        return self.busy_row

    def _build_editor(self) -> QWidget:
        self.edit_panel = QWidget()
        self.editor = QPlainTextEdit()
        self.editor.setObjectName("summaryEditor")
        self.editor.setTabChangesFocus(True)
        self.editor.setMinimumHeight(90)
        self.editor.setMaximumHeight(220)
        hint = QLabel(self.tr("Ctrl+Enter to save · Esc to cancel"))
        hint.setObjectName("summaryHint")
        hint.setWordWrap(True)
        self.editor_cancel_button = QPushButton(self.tr("Cancel"))
        self.editor_cancel_button.setObjectName("summaryEditCancel")
        self.save_button = QPushButton(self.tr("Save"))
        self.save_button.setObjectName("summarySave")
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(hint, 1)
        row.addWidget(self.editor_cancel_button)
        row.addWidget(self.save_button)
        layout = QVBoxLayout(self.edit_panel)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        layout.addWidget(self.editor)
        layout.addLayout(row)
        self.editor_cancel_button.clicked.connect(self.cancel_edit)
        self.save_button.clicked.connect(self._on_save_clicked)
        install_edit_shortcuts(self.editor, self._on_save_clicked, self.cancel_edit)
        self.edit_panel.setVisible(False)
        return self.edit_panel

    # ----- slots ---------------------------------------------------------------------------
    @Slot(str, int, int, int)
    def set_summary(self, text: str, folded_turns: int, tokens: int, cap: int) -> None:
        """Show `text` standing for `folded_turns` turns, `tokens` long (header included) out of
        a cap of `cap` tokens. An open editor keeps the user's draft; Cancel then shows `text`."""
        self._text = text.strip()
        self._folded_turns = folded_turns
        self._tokens = tokens
        self._cap = cap
        self._refresh()

    @Slot(bool)
    def set_summarizing(self, summarizing: bool) -> None:
        self._summarizing = summarizing
        self._refresh()

    def clear(self) -> None:
        """No summary, not summarizing, editor closed (a new or different conversation)."""
        self._editing = False
        self._summarizing = False
        self.set_summary("", 0, 0, 0)

    def text(self) -> str:
        return self._text

    def is_expanded(self) -> bool:
        return self.toggle_button.isChecked()

    def set_expanded(self, expanded: bool) -> None:
        self.toggle_button.setChecked(expanded)

    def is_editing(self) -> bool:
        return self._editing

    def begin_edit(self) -> None:
        self.editor.setPlainText(self._text)
        self._editing = True
        self.set_expanded(True)
        self._refresh()
        self.editor.setFocus()

    @Slot()
    def cancel_edit(self) -> None:
        self._editing = False
        self._refresh()

    # ----- internals -----------------------------------------------------------------------
    @Slot(bool)
    def _on_toggle_toggled(self, _checked: bool) -> None:
        self._refresh()

    @Slot()
    def _on_edit_clicked(self) -> None:
        self.begin_edit()

    @Slot()
    def _on_save_clicked(self) -> None:
        text = self.editor.toPlainText().strip()
        self._editing = False
        self._text = text
        self._refresh()
        self.summary_edited.emit(text)

    def _refresh(self) -> None:
        editing = self._editing
        expanded = self.is_expanded()
        self.setVisible(bool(self._text) or self._summarizing or editing)
        self.toggle_button.setText(("▾  " if expanded else "▸  ") + title())
        self.meta_label.setText(self._meta_text())
        over = self._cap > 0 and self._tokens > self._cap
        if self.meta_label.property("over") != over:
            self.meta_label.setProperty("over", over)
            self.meta_label.style().unpolish(self.meta_label)
            self.meta_label.style().polish(self.meta_label)
        self.busy_row.setVisible(self._summarizing)
        self.text_label.setText(self._text)
        self.text_label.setVisible(expanded and bool(self._text) and not editing)
        self.edit_panel.setVisible(editing and expanded)
        self.edit_button.setVisible(bool(self._text) and not editing)
        self.edit_button.setEnabled(not self._summarizing)

    def _meta_text(self) -> str:
        if not self._text:
            return ""
        parts = [self.tr("{0} turns folded in", "", self._folded_turns).format(f"{self._folded_turns:,}")]
        if self._cap > 0:
            parts.append(self.tr("{0} / {1} tokens").format(f"{self._tokens:,}", f"{self._cap:,}"))
        else:
            parts.append(self.tr("{0} tokens", "", self._tokens).format(f"{self._tokens:,}"))
        return " · ".join(parts)
