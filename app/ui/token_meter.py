"""One line under the composer: how full the context window is (issue 4 item 2).

"812 / 1,536 tokens in context · 4 turns in window · 3 folded into summary" — amber from
`WARN_FRACTION` of the budget on, red when over it (the newest message alone does not fit).
"""

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QLabel

# At 90% of the prompt budget one more average exchange will usually evict a turn; the colour
# warns the user before the window starts folding turns into the summary.
WARN_FRACTION = 0.9


class TokenMeter(QLabel):
    """Context usage under the composer. No signals.

    The `level` property ("ok", "warn", "over") drives the stylesheet colour.
    """

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("tokenMeter")
        self.setContentsMargins(14, 0, 14, 6)
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
        self.setText(" · ".join(parts))
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
        self.setText("")
        self.setToolTip("")
        self._set_level("ok")

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
