"""The reasoning of an answer ("<think>…</think>", app.core.reasoning), folded above it in its
bubble, as LM Studio, Jan and Ollama's app show it: one quiet line that says "Thinking…" while the
model reasons and "Reasoning" once it answers, and that opens to the reasoning itself, dimmed.
"""

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QFrame, QToolButton, QVBoxLayout

from app.ui.markdown_view import MarkdownView


class ReasoningSection(QFrame):
    """A toggle and, while it is expanded, the reasoning as Markdown (muted, behind a rule).

    `show_reasoning(text, finished, streaming)` is called on every flush of the bubble; the
    reasoning is laid out only while expanded, and then only what is new (MarkdownView), so a
    long reasoning streams at no cost while collapsed. Collapsed by default, also when a chat is
    opened again. Hidden by its bubble for an answer without reasoning.

    Signals: none (the toggle's `toggled` for whoever wants to know).
    """

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("reasoningSection")
        self.toggle_button = QToolButton()
        self.toggle_button.setObjectName("reasoningToggle")
        self.toggle_button.setCheckable(True)
        self.toggle_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.toggle_button.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        self.body = MarkdownView()
        self.body.setObjectName("reasoningBody")
        self.body.setAttribute(Qt.WidgetAttribute.WA_StyledBackground)  # draws the stylesheet's rule
        self.body.layout().setContentsMargins(self.fontMetrics().averageCharWidth() * 2, 0, 0, 0)  # off the rule
        self.body.setAccessibleName(self.tr("Reasoning"))
        self.body.setVisible(False)
        layout = QVBoxLayout(self)
        layout.setSpacing(4)
        layout.addWidget(self.toggle_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.body)
        self.text = ""
        self._finished = True
        self._streaming = False
        self.toggle_button.toggled.connect(self._on_toggle_button_toggled)
        self._refresh()

    def show_reasoning(self, text: str, finished: bool, streaming: bool) -> None:
        """`text`: the reasoning so far (stripped); `finished`: its "</think>" came (the answer
        has begun); `streaming`: the reply is still being written."""
        if (text, finished, streaming) == (self.text, self._finished, self._streaming):
            return
        self.text, self._finished, self._streaming = text, finished, streaming
        self._refresh()

    def is_expanded(self) -> bool:
        return self.toggle_button.isChecked()

    def set_expanded(self, expanded: bool) -> None:
        self.toggle_button.setChecked(expanded)

    def title(self) -> str:
        """What the toggle says: "Thinking…" while the model reasons; once it has stopped,
        "Reasoning", or "Reasoning (unfinished)" when the reply ended inside it (stopped, or
        max new tokens reached)."""
        if not self._finished:
            return self.tr("Thinking…") if self._streaming else self.tr("Reasoning (unfinished)")
        return self.tr("Reasoning")

    def plain_text(self) -> str:
        """What a reader sees: the title, and the reasoning while expanded."""
        return "\n".join(part for part in (self.title(), self.body.plain_text() if self.is_expanded() else "")
                         if part)

    @Slot(bool)
    def _on_toggle_button_toggled(self, _checked: bool) -> None:
        self._refresh()

    def _refresh(self) -> None:
        expanded = self.is_expanded()
        self.toggle_button.setText(("▾  " if expanded else "▸  ") + self.title())
        self.toggle_button.setAccessibleName(self.title())
        self.toggle_button.setToolTip(self.tr("Hide the model's reasoning") if expanded
                                      else self.tr("Show how the model reasoned before it answered"))
        if expanded:  # laid out only when read
            self.body.set_markdown(self.text, final=self._finished or not self._streaming)
        open_ = expanded and bool(self.text)
        self.body.setVisible(open_)
        # open, the reasoning stands apart from the answer by half a line
        self.layout().setContentsMargins(0, 0, 0, self.fontMetrics().height() // 2 if open_ else 2)
