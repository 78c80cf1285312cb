"""One line under the composer: how full the context window is (issue 4 item 2).

"812 / 1,536 tokens in context · 4 turns in window · 3 folded into summary" — amber from
`WARN_FRACTION` of the budget on, red when over it (the newest message alone does not fit).
Where the column is too narrow for it, it wraps after a "·", never inside a part (new-user trial
9: "… · ≈32 for pinned not" was cut at the right edge at 640 and 800 px).
"""

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QLabel, QSizePolicy

# At 90% of the prompt budget one more average exchange will usually evict a turn; the colour
# warns the user before the window starts folding turns into the summary.
WARN_FRACTION = 0.9
NBSP = "\u00a0"
SEPARATOR = NBSP + "· "  # a line may end after the dot, never start with it


class TokenMeter(QLabel):
    """Context usage under the composer. No signals.

    The `level` property ("ok", "warn", "over") drives the stylesheet colour.
    """

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("tokenMeter")
        self.setContentsMargins(14, 0, 14, 6)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(True)
        # its lines' width is the column's: the text never widens the window
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._text = ""
        self._pinned_tokens = 0
        self._set_level("ok")

    @Slot(int, int, int, int)
    def set_counts(self, used: int, budget: int, window_turns: int, folded_turns: int) -> None:
        """`used` prompt tokens of a `budget` (TokenBudget.prompt_tokens: context − max new
        tokens − summary reserve); `window_turns` whole turns in the window; `folded_turns`
        turns folded into the rolling summary."""
        if budget <= 0:  # max new tokens (+ the summary reserve) take the whole context
            parts = [self.tr("{0} tokens: no room left beside max new tokens", "", used).format(f"{used:,}")]
        else:
            parts = [self.tr("{0} / {1} tokens in context").format(f"{used:,}", f"{budget:,}")]
        parts.append(self.tr("%n turns in window", "", window_turns))
        if folded_turns:
            parts.append(self.tr("%n folded into summary", "", folded_turns))
        if self._pinned_tokens:
            parts.append(self.tr("≈{0} for pinned notes").format(f"{self._pinned_tokens:,}"))
        self._show(parts)
        if budget <= 0 or used > budget:
            level = "over"
        elif used >= WARN_FRACTION * budget:
            level = "warn"
        else:
            level = "ok"
        self._set_level(level)
        self.setToolTip(self._tooltip(used, budget, level))

    @Slot(str, int)
    def set_pinned(self, _notes: str, tokens: int) -> None:
        """The pinned notes take ≈`tokens` of every prompt (counted in `used`); said from the
        next `set_counts` on."""
        self._pinned_tokens = tokens

    @Slot()
    def reset(self) -> None:
        """Nothing to count (no model, empty chat)."""
        self._show([])
        self.setToolTip("")
        self._set_level("ok")

    def text(self) -> str:
        """The line as said: its parts joined by " · ", with plain spaces."""
        return self._text

    def _show(self, parts: list[str]) -> None:
        """Its spaces are non-breaking but those after each "·": a part is never split over two lines."""
        self._text = " · ".join(parts)
        self.setText(SEPARATOR.join(part.replace(" ", NBSP) for part in parts))

    def level(self) -> str:
        return self.property("level")

    def _set_level(self, level: str) -> None:
        if self.property("level") != level:
            self.setProperty("level", level)
            self.style().unpolish(self)
            self.style().polish(self)

    def _tooltip(self, used: int, budget: int, level: str) -> str:
        base = self.tr("Tokens the next prompt takes (system prompt, summary, recent turns, files attached\n"
                       "to the next message) out of the budget left after reserving room for the answer\n"
                       "and the summary.")
        if level == "over":
            return base + "\n" + self.tr("The newest message does not fit: shorten it or raise the context size.")
        if level == "warn":
            return base + "\n" + self.tr("{0} tokens left: the oldest turns will soon be folded into the "
                                         "summary.", "", budget - used).format(f"{budget - used:,}")
        return base
